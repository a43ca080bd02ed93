import type { Store } from '../../src/core/ports/index.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import { describeStoreContract } from '../../src/testing/index.js';
import { useRedis } from '../support/redis.js';

// The whole store contract on Redis, as memory and SQLite run it (stores.test.ts), on the caller's
// clock (every TTL by the `now` the cases pass), each store under a key prefix of its own; reopened
// on the same keys for the restart cases. A shared store leaves out the shutdown cases and the
// cached counts (ContractOptions.shared); redis.test.ts and the model check cover those.
const server = useRedis();

let n = 0;
const prefixes = new WeakMap<Store, string>();
const open = async (keyPrefix = `contract${n++}`): Promise<Store> => {
  const store = await RedisStore.open(server.url, { commandTimeoutMs: 3000, keyPrefix, clock: 'caller' });
  prefixes.set(store, keyPrefix);
  return store;
};
describeStoreContract('redis', () => open(), {
  shared: true,
  async reopen(store) {
    await store.close();
    return open(prefixes.get(store));
  },
});
