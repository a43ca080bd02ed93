import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { MemoryStore } from '../../src/store/local/memory.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempDir } from '../helpers.js';
import { describeCloseCases } from './close-cases.js';
import { type RedisServer, startRedis } from './redis-server.js';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.stop();
});

describeCloseCases('memory', async () => new MemoryStore());
describeCloseCases('sqlite', async () => new SqliteStore(join(tempDir().path, 'store.db'), { now: 0 }));
// A fresh key prefix per case: every case starts on an empty store.
let n = 0;
describeCloseCases('redis', async () => RedisStore.open(server.url, { commandTimeoutMs: 3000, keyPrefix: `close${n++}`, clock: 'caller' }));
