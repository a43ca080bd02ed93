#!/usr/bin/env node
import { resolve } from 'node:path';
import pino, { type Logger } from 'pino';
import { loadConfig } from './service/configure.js';
import { withDotEnv } from './config/load.js';
import type { Config } from './config/schema.js';
import { ConfigError, isConfigError, isIntakeError } from './core/errors.js';
import { listen, serve, whileStarting } from './http/server.js';
import { createIntake } from './service/intake.js';

/** Last resort of a stop that hangs (a stuck store, a log sink that never drains): exit anyway. */
const HARD_EXIT_MS = 15_000;
/** Connections still open this long after a stop are closed. */
const FORCE_CLOSE_MS = 10_000;

/** How long an exit waits for the log lines already written to reach the reader. */
const LOG_DRAIN_MS = 2_000;

interface ProcessLog {
  logger: Logger;
  /** Resolves once every line logged so far is written, the reader is gone, or after `boundMs`. */
  drained(boundMs: number): Promise<void>;
  /** Stop pino's exit hook from writing: sonic-boom's flushSync retries a broken pipe forever. */
  detach(): void;
}

/**
 * Logs go to stdout asynchronously, so a slow log reader never blocks the service, and a reader
 * that went away (EPIPE: the pipe's other end closed) silences the log instead of stopping a
 * shutdown. Written bytes are counted from the destination's own `write` events, so an exit can
 * wait for them without calling flushSync (which never returns on EPIPE in sonic-boom 4).
 */
function processLog(level: Config['logLevel']): ProcessLog {
  const destination = pino.destination({ dest: 1, sync: false });
  let requested = 0;
  let written = 0;
  let readerGone = false;
  const waiters = new Set<() => void>();
  const settle = () => {
    if (readerGone || written >= requested) for (const wake of waiters) wake();
  };
  const write = destination.write.bind(destination);
  destination.write = (chunk: string) => {
    if (readerGone) return true;
    requested += Buffer.byteLength(chunk);
    return write(chunk);
  };
  destination.on('write', (bytes: number) => {
    written += bytes;
    settle();
  });
  destination.on('error', (error: NodeJS.ErrnoException) => {
    // EPIPE is the reader gone; anything else is a log sink that cannot be written either.
    if (error.code !== 'EPIPE') console.error(`agent-intake: log output failed: ${error.message}`);
    readerGone = true;
    settle();
  });
  return {
    logger: pino({ level }, destination),
    drained: (boundMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(done, boundMs);
        function done() {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        waiters.add(done);
        settle();
      }),
    detach() {
      destination.flushSync = () => undefined;
    },
  };
}

/** The store setting for a log line: a Redis URL without its password. */
function redactedStore(store: string): string {
  return store.replace(/^(rediss?:\/\/)[^@/]*@/, '$1***@');
}

/** `EACCES: permission denied, mkdir '…'`: Node's file errors name their code first already, SQLite's do not. */
function withCode(code: string | undefined, message: string): string {
  return code === undefined || message.startsWith(`${code}:`) ? message : `${code}: ${message}`;
}

/** Start-up failures the operator fixes in a setting, as one line naming it; anything else is rethrown. */
function startupError(error: unknown, config: Config): unknown {
  if (isIntakeError(error) && error.code === 'store_in_use')
    return new ConfigError(`${error.message} (store / INTAKE_STORE)`, { cause: error });
  // A store that is down at start (Redis not running, wrong port) is one line naming the setting.
  if (isIntakeError(error) && error.code === 'store_unavailable')
    return new ConfigError(`${error.message}; is it running? (store / INTAKE_STORE)`, { cause: error });
  const { code, path, message } = error as NodeJS.ErrnoException;
  const storePath = config.store.startsWith('sqlite:') ? resolve(config.store.slice('sqlite:'.length)) : undefined;
  const sqliteFailure = typeof code === 'string' && /^SQLITE_(CANTOPEN|READONLY|PERM|IOERR)/.test(code);
  const fileFailure =
    code === 'EACCES' || code === 'EROFS' || code === 'EPERM' || code === 'ENOTDIR' || code === 'EEXIST';
  if (storePath && (sqliteFailure || (fileFailure && path !== undefined && storePath.startsWith(resolve(path))))) {
    return new ConfigError(
      `store path ${storePath} is not writable (store / INTAKE_STORE): ${withCode(code, message)}`,
      { cause: error },
    );
  }
  const mediaDir = resolve(config.media.dir);
  if (fileFailure && path !== undefined && (resolve(path).startsWith(mediaDir) || mediaDir.startsWith(resolve(path)))) {
    return new ConfigError(
      `media folder ${mediaDir} is not writable (media.dir / INTAKE_MEDIA_DIR): ${withCode(code, message)}`,
      { cause: error },
    );
  }
  return error;
}

/** Process entry: config -> listen -> store and intake -> serve -> graceful stop. */
async function main(): Promise<void> {
  // The process's environment (the library reads none unless handed it); a .env beside
  // .env.example fills in what the environment does not set.
  const config = loadConfig({ env: withDotEnv(process.cwd(), process.env) });
  const log = processLog(config.logLevel);
  const { logger } = log;
  // Listen first: opening a store with a large backlog takes seconds, and meanwhile the process
  // is alive (/healthz), not ready (/readyz), and answers 503 + Retry-After to webhooks.
  const server = await listen(whileStarting, config, logger);
  const intake = await createIntake({ config, logger }).catch((error: unknown) => {
    server.close();
    throw startupError(error, config);
  });
  serve(server, intake.app.callback());
  // WebSocket upgrades of socket channels (OneBot ws-reverse); any other upgrade is refused.
  server.on('upgrade', (request, socket, head) => {
    if (!intake.upgrade(request, socket, head))
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.server.port;
  logger.info(
    { host: config.server.host, port, store: redactedStore(config.store), channels: config.channels.map((c) => c.id) },
    `agent-intake listening on http://${config.server.host}:${port}`,
  );

  let stopping = false;
  const exit = async (code: number) => {
    await log.drained(LOG_DRAIN_MS);
    log.detach();
    process.exit(code);
  };
  let drained: (() => void) | undefined;
  const stop = async (signal: string) => {
    if (stopping) {
      // A second signal during the drain period stops at once.
      drained?.();
      return;
    }
    stopping = true;
    if (config.server.drainMs > 0) {
      // Readiness fails first, so a load balancer stops sending; deliveries are still taken meanwhile.
      intake.drain();
      // Ctrl-C in a terminal is SIGINT: whoever pressed it waits out the drain unless told how not to.
      const again = signal === 'SIGINT' ? 'Ctrl-C' : signal;
      logger.info(
        { signal, drainMs: config.server.drainMs },
        `draining: /readyz answers 503, deliveries still taken until the listener closes in ${config.server.drainMs / 1000} s (server.drainMs); ${again} again to stop now`,
      );
      await new Promise<void>((resolve) => {
        drained = resolve;
        setTimeout(resolve, config.server.drainMs).unref();
      });
    }
    setTimeout(() => {
      logger.error({ afterMs: HARD_EXIT_MS }, 'stop did not finish in time; exiting');
      log.detach();
      process.exit(1);
    }, HARD_EXIT_MS).unref();
    logger.info({ signal }, 'stopping: no new deliveries, flushing open buffers');
    server.close();
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), FORCE_CLOSE_MS).unref();
    try {
      await intake.close();
      logger.info('stopped cleanly');
      await exit(0);
    } catch (error) {
      logger.error({ err: error }, 'stop failed');
      await exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  if (isConfigError(error)) console.error(`agent-intake: ${error.message}`);
  else console.error('agent-intake failed to start:', error);
  process.exit(1);
});
