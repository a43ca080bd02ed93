import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { MemoryStore } from './local/memory.js';
import type { RedisStoreOptions } from './redis/redis.js';
import { SqliteStore } from './sqlite/sqlite.js';
import type { Store } from '../ports.js';

export type { Store, StoreOptions } from '../ports.js';
export type { RedisStoreOptions } from './redis/redis.js';

/**
 * Open the store named by the `store` setting: `memory`, `sqlite:<path>`, or
 * `redis://[:password@]host:port[/db]` / `rediss://...` (TLS). Async because a shared store
 * connects at start, and fails there when it cannot.
 */
export async function openStore(spec: string, cwd = process.cwd(), options: RedisStoreOptions = {}): Promise<Store> {
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
  throw new ConfigError(`store: unsupported value "${spec}"; use "memory", "sqlite:<path>" or "redis://[:password@]host:port[/db]"`);
}
