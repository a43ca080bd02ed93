import { resolve } from 'node:path';
import { ConfigError } from '../core/errors.js';
import { MemoryStore } from './local/memory.js';
import type { ShardedStoreOptions } from './redis/sharded.js';
import { SqliteStore } from './sqlite/sqlite.js';
import type { Store } from '../core/ports/index.js';

export type { Store, StoreOptions } from '../core/ports/index.js';
export type { RedisStoreOptions } from './redis/redis.js';

/**
 * Open the store named by the `store` setting: `memory`, `sqlite:<path>`, or
 * `redis://[:password@]host:port[/db]` / `rediss://...` (TLS), or `redis-cluster://host:port[,...]`
 * (a Redis Cluster, sharded by session: redis/sharded.ts). Async because a shared store
 * connects at start, and fails there when it cannot.
 */
export async function openStore(spec: string, cwd = process.cwd(), options: ShardedStoreOptions = {}): Promise<Store> {
  if (spec === 'memory') return new MemoryStore(options);
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    return SqliteStore.open(path === ':memory:' ? path : resolve(cwd, path), options);
  }
  if (spec.startsWith('redis://') || spec.startsWith('rediss://')) {
    // Loaded only for a Redis store: ioredis is a tenth of a second of every other start.
    const { RedisStore } = await import('./redis/redis.js');
    return RedisStore.open(spec, options);
  }
  if (spec.startsWith('redis-cluster://')) {
    const { ShardedRedisStore } = await import('./redis/sharded.js');
    return ShardedRedisStore.open(spec, options);
  }
  throw new ConfigError(
    `store: unsupported value "${spec}"; use "memory", "sqlite:<path>", "redis://[:password@]host:port[/db]" or "redis-cluster://host:port[,host:port...]"`,
  );
}
