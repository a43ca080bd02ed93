import type Koa from 'koa';
import compose from 'koa-compose';
import { loadConfig, type LoadOptions } from './config/load.js';
import type { Config } from './config/schema.js';
import type { Output, OutputOf } from './emit/output.js';
import { createApp } from './http/app.js';
import { Pipeline, type IntakeDeps } from './pipeline.js';
import type { OutputType } from './store/types.js';

export interface CreateIntakeOptions extends Omit<IntakeDeps, 'config'> {
  /** A loaded Config; or give `configFile`/`env` to load one. */
  config?: Config;
  /** Raw config object (CONTRACT §2 shape), validated like the file. */
  configFile?: Record<string, unknown>;
  env?: LoadOptions['env'];
}

/** The library surface of CONTRACT §7. */
export interface Intake {
  /** The Koa app serving CONTRACT §3; `app.listen()` or mount `middleware()` in your own. */
  readonly app: Koa;
  readonly config: Config;
  readonly pipeline: Pipeline;
  /** The app as one Koa middleware, to mount inside another Koa app. */
  middleware(): Koa.Middleware;
  /** Receive every output of a type (`chat.processedMessage`, `chat.notice`, `chat.request`). */
  on<T extends OutputType>(event: T, listener: (output: OutputOf<T>) => unknown): Intake;
  off<T extends OutputType>(event: T, listener: (output: OutputOf<T>) => unknown): Intake;
  /** Stop: flush every open buffer, finish in-flight work, close the store. */
  close(): Promise<void>;
}

/**
 * Build the service: config -> store -> stages -> HTTP app. Open buffers left by a previous
 * run of a durable store are re-armed before this resolves.
 */
export async function createIntake(options: CreateIntakeOptions = {}): Promise<Intake> {
  const config = options.config ?? loadConfig({
    ...(options.configFile ? { file: options.configFile } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  const pipeline = new Pipeline({ ...options, config });
  const app = createApp(pipeline);
  await pipeline.start();
  const intake: Intake = {
    app,
    config,
    pipeline,
    middleware: () => compose(app.middleware) as Koa.Middleware,
    on(event, listener) {
      pipeline.outlet.emitter.on(event, listener as (output: Output) => unknown);
      return intake;
    },
    off(event, listener) {
      pipeline.outlet.emitter.off(event, listener as (output: Output) => unknown);
      return intake;
    },
    close: () => pipeline.close(),
  };
  return intake;
}
