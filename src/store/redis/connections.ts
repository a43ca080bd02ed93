import { Redis, type RedisOptions } from 'ioredis';
import { scripts, type ScriptName } from './scripts.js';

export type { ScriptName };

/** A connection with the store's scripts: each takes the key prefix as its one key. */
export type ScriptedRedis = Redis & {
  [name in ScriptName]: (prefix: string, ...args: Array<string | number>) => Promise<unknown>;
};

export interface ConnectionLogger {
  warn(obj: object, msg: string): void;
  /** What an operator must act on (the store was reset); falls back to `warn`. */
  error?(obj: object, msg: string): void;
}

/**
 * A connection to `url` with the store's scripts defined. ioredis runs a defined script with
 * EVALSHA and, on NOSCRIPT (a restarted or failed-over server), sends it again with EVAL.
 * Errors are logged once per outage, not once per reconnect attempt.
 */
export function connect(url: string, role: string, options: RedisOptions, logger?: ConnectionLogger): ScriptedRedis {
  const client = new Redis(url, { lazyConnect: true, connectionName: `agent-intake:${role}`, ...options });
  for (const [name, lua] of Object.entries(scripts())) client.defineCommand(name, { lua, numberOfKeys: 1 });
  let failing = false;
  client.on('error', (error: Error) => {
    if (failing) return;
    failing = true;
    logger?.warn({ err: error, role }, `Redis store: ${role} connection failed: ${error.message}`);
  });
  client.on('ready', () => {
    failing = false;
  });
  return client as ScriptedRedis;
}

/**
 * Ingest: fail fast instead of queueing while Redis is away (a webhook answers 503 and the
 * platform retries), and never wait longer than `commandTimeout` for an answer.
 */
export function ingestOptions(commandTimeoutMs: number): RedisOptions {
  return { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: commandTimeoutMs, autoResubscribe: false };
}

/** Background loops (flush, push, stats): queue and retry across a short outage. */
export function backgroundOptions(commandTimeoutMs: number): RedisOptions {
  return { maxRetriesPerRequest: 3, commandTimeout: Math.max(commandTimeoutMs * 5, 5000) };
}

/** The blocking XREAD connection: no timeout (it blocks on purpose), waits for reconnection. */
export function blockingOptions(): RedisOptions {
  return { maxRetriesPerRequest: null };
}
