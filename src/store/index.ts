import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { MemoryStore } from './memory.js';
import { SqliteStore } from './sqlite.js';
import type { Store, StoreOptions } from './types.js';

export type { Store, StoreOptions } from './types.js';

/** Open the store named by the `store` setting (`memory` or `sqlite:<path>`). */
export function openStore(spec: string, cwd = process.cwd(), options: StoreOptions = {}): Store {
  if (spec === 'memory') return new MemoryStore(options);
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    return new SqliteStore(path === ':memory:' ? path : resolve(cwd, path), options);
  }
  throw new ConfigError(`store: unsupported value "${spec}"; use "memory" or "sqlite:<path>"`);
}
