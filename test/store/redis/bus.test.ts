import { describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { useRedis } from '../../support/redis.js';

const server = useRedis();

describe('the instance bus on a real redis-server', () => {
  it('relays an action to the instance that serves it, says "unheard" when none listens, and undefined when no answer comes in time', async () => {
    const [a, b] = await Promise.all([
      RedisStore.open(server.url, { keyPrefix: 'bus1:' }),
      RedisStore.open(server.url, { keyPrefix: 'bus1:' }),
    ]);
    try {
      const stop = await a.bus.serveActions('a', async (action) => ({ ok: true, body: { echoed: action.action } }));
      const action = { channel: 'qq', action: 'send_group_msg', params: {} };
      expect(await b.bus.relayAction('a', action, 2000)).toEqual({ ok: true, body: { echoed: 'send_group_msg' } });
      expect(await b.bus.relayAction('gone', action, 2000)).toBe('unheard');
      stop();
      await a.bus.serveActions('slow', () => new Promise(() => undefined));
      expect(await b.bus.relayAction('slow', action, 100)).toBeUndefined();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
