import type { Store } from '../../src/core/ports/index.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import { describeCloseRules, describeTurnRules } from '../../src/testing/index.js';
import { useRedis } from '../support/redis.js';

// The debounce close rules on Redis (the Lua twin of the TypeScript rules memory and SQLite run
// in the whole contract, stores.test.ts), on the caller's clock, each case under a key prefix of
// its own. The rest of the contract drives claim and group expiry by the caller's time, which
// Redis keeps with key TTLs on its own clock: redis.test.ts and the model check cover those.
const server = useRedis();

let n = 0;
describeCloseRules('redis', async () => RedisStore.open(server.url, { commandTimeoutMs: 3000, keyPrefix: `contract${n++}`, clock: 'caller' }));
// A restart of the turn rules: the store closed and opened again on the same keys.
const prefixes = new WeakMap<Store, string>();
const openTurns = async (keyPrefix: string): Promise<Store> => {
  const store = await RedisStore.open(server.url, { commandTimeoutMs: 3000, keyPrefix, clock: 'caller' });
  prefixes.set(store, keyPrefix);
  return store;
};
describeTurnRules('redis', () => openTurns(`turns${n++}`), async (store) => {
  await store.close();
  return openTurns(prefixes.get(store) as string);
});
