import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ConfigError } from '../../core/errors.js';
import { redacted } from './codec.js';
import { scripts, type ScriptName, type ScriptSet } from './scripts.js';

export type { ScriptName, ScriptSet };

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
 * Errors are logged once per outage, not once per reconnect attempt. A `redis-cluster://` URL
 * gives an ioredis `Cluster` (typed as one connection: every command the store sends names
 * keys of one slot, and Cluster routes it by them).
 */
export function connect(
  url: string,
  role: string,
  options: RedisOptions,
  logger?: ConnectionLogger,
  set: ScriptSet = 'whole',
): ScriptedRedis {
  const named: RedisOptions = { lazyConnect: true, connectionName: `agent-intake:${role}`, ...options };
  const client = isClusterUrl(url) ? clusterOf(url, named) : new Redis(url, named);
  for (const [name, lua] of Object.entries(scripts(set))) defineScript(client, name, lua);
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
 * A script under `name`, called with the key prefix and its arguments. Redis is told of two keys
 * of the prefix's slot: the prefix (never a key itself) and `<prefix>guard` (never written). While
 * Redis Cluster migrates that slot, its keys are split between two nodes one MIGRATE at a time;
 * with one declared key, absent, the old node sends the script on (ASK) and the new one runs it
 * on the keys moved so far (a claim not there, a seq started again). Two keys, one of them absent,
 * make either node refuse it (TRYAGAIN, which the client retries) until the slot has moved.
 */
function defineScript(client: Redis, name: string, lua: string): void {
  client.defineCommand(name, { lua, numberOfKeys: 2 });
  const scripts = client as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>;
  const run = scripts[name] as (...args: Array<string | number>) => Promise<unknown>;
  scripts[name] = (prefix, ...args) => run.call(client, prefix, `${prefix}guard`, ...args);
}

/**
 * Ingest: fail fast instead of queueing while Redis is away (a webhook answers 503 and the
 * platform retries), and never wait longer than `commandTimeout` for an answer.
 */
export function ingestOptions(commandTimeoutMs: number): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    autoResubscribe: false,
  };
}

/** Background loops (flush, push, stats): queue and retry across a short outage. */
export function backgroundOptions(commandTimeoutMs: number): RedisOptions {
  return { maxRetriesPerRequest: 3, commandTimeout: Math.max(commandTimeoutMs * 5, 5000) };
}

/** The blocking XREAD connection: no timeout (it blocks on purpose), waits for reconnection. */
export function blockingOptions(): RedisOptions {
  return { maxRetriesPerRequest: null };
}

/** Whether `url` names a Redis Cluster (`redis-cluster://[:password@]host:port[,host:port...]`). */
export function isClusterUrl(url: string): boolean {
  return url.startsWith('redis-cluster://');
}

/** The seed nodes and password of a `redis-cluster://` URL; throws naming what is wrong. */
export function clusterNodes(url: string): { nodes: Array<{ host: string; port: number }>; password?: string } {
  const match = /^redis-cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/.exec(url);
  if (!match)
    throw new ConfigError(`store: "${redacted(url)}" is not redis-cluster://[:password@]host:port[,host:port...]`);
  const nodes = (match[2] as string).split(',').map((node) => {
    const at = /^([^:,]+|\[[^\]]+\]):(\d{1,5})$/.exec(node.trim());
    if (!at || Number(at[2]) > 65535)
      throw new ConfigError(`store: "${node}" in the redis-cluster:// URL is not host:port`);
    return { host: (at[1] as string).replace(/^\[|\]$/g, ''), port: Number(at[2]) };
  });
  const auth = match[1];
  if (auth === undefined || auth === '') return { nodes };
  return { nodes, password: decodeURIComponent(auth.slice(auth.indexOf(':') + 1)) };
}

/** An ioredis Cluster on the URL's seed nodes, each node's connection with `options`. */
function clusterOf(url: string, options: RedisOptions): Redis {
  const { nodes, password } = clusterNodes(url);
  const { enableOfflineQueue, lazyConnect, ...perNode } = options;
  const cluster = new Cluster(nodes, {
    lazyConnect,
    enableOfflineQueue: enableOfflineQueue ?? true,
    redisOptions: password === undefined ? perNode : { ...perNode, password },
  });
  return cluster as unknown as Redis;
}
