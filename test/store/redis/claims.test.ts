import { describe, expect, it } from 'vitest';
import type { ClaimLease } from '../../../src/core/ports/index.js';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { claimOfReply, claimOutputsReply, ReplyShapeError } from '../../../src/store/redis/replies.js';
import { commitAll } from '../../../src/testing/store/harness.js';
import { draft } from '../../../src/testing/index.js';
import { useRedis } from '../../support/redis.js';

// Claims on Redis beyond the store contract (which runs on the caller's clock, redis-contract.test.ts):
// the replies' decoders, and a lease key that outlives its end on the server's own clock.
const server = useRedis();

describe('claims on Redis', () => {
  it('decode what claim-outputs.lua and claim-of.lua answer, naming the place of a bad shape', () => {
    const entry = ['4-0', ['i', 'o4'], 'pending 1 10 0\n'];
    expect(claimOutputsReply([[...entry, 7, 110, 1]])).toEqual([[entry, 7, 110, true]]);
    expect(claimOfReply(null)).toBeNull();
    expect(claimOfReply([...entry, null])).toEqual([entry, null]);
    expect(claimOfReply([...entry, '7 110'])).toEqual([entry, { token: 7, leaseUntil: 110 }]);
    expect(() => claimOutputsReply([[...entry, 7, '110', 0]])).toThrow(
      'Unexpected reply from claim-outputs.lua: reply[0][4] is "110", not an integer',
    );
    expect(() => claimOfReply([...entry, '7'])).toThrow(ReplyShapeError);
  });

  it('tells a lease that ran out from a head never leased after the lease time passed on the server too', async () => {
    const store = await RedisStore.open(server.url, { keyPrefix: 'claims-kept', clock: 'caller' });
    try {
      await commitAll(store, [draft('r1', 'pending')]);
      const [lease] = (await store.claimOutputs(0, 1, 10)) as [ClaimLease];
      // the lease key's own time (server time) is past its 1 ms: the lease must still be read
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await store.claimOf('r1')).toMatchObject({ lease: { token: lease.token, leaseUntil: 1 } });
      expect(await store.claimOutputs(1, 100, 10)).toMatchObject([{ record: { attempts: 2 }, expired: true }]);
    } finally {
      await store.close();
    }
  });
});
