import { describe, expect, it } from 'vitest';
import { Links } from '../../src/connections/links.js';
import { SocketDialer } from '../../src/connections/socket-dialer.js';
import { silent } from '../helpers.js';
import { ManualClock } from '../manual-clock.js';

const dialer = (random: () => number, reconnectMinMs = 1000, reconnectMaxMs = 30_000) => {
  const clock = new ManualClock();
  const links = new Links({ instance: 'test', now: clock.now, logger: silent, classify: () => undefined, deliver: async () => undefined, counted: () => undefined });
  return new SocketDialer({
    key: 'k', target: { channel: 'c', adapter: 'onebot', transport: 'ws' },
    dial: { url: 'ws://127.0.0.1:9', headers: {}, reconnectMinMs, reconnectMaxMs, leaseMs: 15_000 },
    maxPayload: 1024, actionTimeoutMs: 100, clock, logger: silent, random,
  }, links);
};

describe('the forward socket dialer\'s reconnect backoff', () => {
  it('doubles from reconnectMinMs up to reconnectMaxMs, each wait between half and all of its ceiling', () => {
    const top = dialer(() => 0.999_999);
    expect([0, 1, 2, 3, 4, 5, 6, 40].map((failures) => top.backoffMs(failures))).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    const bottom = dialer(() => 0);
    expect([0, 1, 5, 40].map((failures) => bottom.backoffMs(failures))).toEqual([500, 1000, 15_000, 15_000]);
  });

  it('spreads the waits of bots that failed together', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647);
    const waits = new Set(Array.from({ length: 50 }, () => dialer(random, 100, 100).backoffMs(3)));
    expect(waits.size).toBeGreaterThan(20);
    for (const wait of waits) expect(wait).toBeGreaterThanOrEqual(50);
  });
});
