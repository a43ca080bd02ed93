import type Koa from 'koa';
import compose from 'koa-compose';
import { loadConfig, type LoadOptions } from './config/load.js';
import type { Config } from './config/schema.js';
import type { Output, OutputOf } from './emit/output.js';
import { createApp } from './http/app.js';
import { Pipeline, type IntakeDeps } from './pipeline.js';
import type { OutputType } from './store/types.js';
import type { BotRef, InboundEvent } from './events.js';
import type { CorrelationRecord } from './correlate/correlator.js';
import type { Handler } from './handlers/routes.js';

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
  /**
   * Run `fn` for events of a route (`message`, `message.group`, `notice.group_increase`,
   * `request.friend`, ...) once per logical event; a leading `!` runs it for every delivery.
   */
  handle(route: string | readonly string[], fn: Handler): Intake;
  /** What the correlator knows of an event's logical group (every delivery, each bot's ids). */
  correlation(event: InboundEvent): CorrelationRecord | undefined;
  /** Every bot that delivered this logical event, first arrival first. */
  botsForEvent(event: InboundEvent): BotRef[];
  /** Connected bots the message mentions, in mention order. */
  mentionedBots(event: InboundEvent): BotRef[];
  /** The bot that should answer: mentioned and connected, else first arrival, else the deliverer. */
  pickReplyBot(event: InboundEvent): BotRef;
  correlationStats(): { groups: number; observed: number; duplicates: number; evicted: number };
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
    handle(route, fn) {
      pipeline.handlers.handle(route, fn);
      return intake;
    },
    correlation: (event) => pipeline.correlator.correlation(event),
    botsForEvent: (event) => pipeline.correlator.botsForEvent(event),
    mentionedBots: (event) => pipeline.correlator.mentionedBots(event),
    pickReplyBot: (event) => pipeline.correlator.pickReplyBot(event),
    correlationStats: () => pipeline.correlator.stats(),
    close: () => pipeline.close(),
  };
  return intake;
}
