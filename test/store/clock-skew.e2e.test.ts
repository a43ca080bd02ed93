import { afterAll, describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/core/clock.js';
import { postJson, type Running, startService, until } from '../support/helpers.js';
import { useRedis } from '../support/redis.js';

/*
 * Two real instances on one redis-server, one of them with its clock 45 s ahead: the debounce
 * window still merges a user's fragments, whichever instance flushes them.
 */

const redis = useRedis();
const services: Running[] = [];
afterAll(async () => {
  await Promise.all(services.map((service) => service.stop()));
});

const ahead: Clock = { ...systemClock, now: () => Date.now() + 45_000 };

async function instance(clock?: Clock): Promise<Running> {
  const service = await startService(
    {
      store: redis.url,
      redis: { keyPrefix: 'skew-e2e', commandTimeoutMs: 3000 },
      debounce: { windowMs: 1500, maxWaitMs: 10_000, maxMessages: 50 }, // fragments 100 ms apart, however slow the machine
    },
    clock ? { clock } : {},
  );
  services.push(service);
  return service;
}

describe('debounce across instances whose clocks disagree', () => {
  it('merges fragments 100 ms apart into one output although one instance runs 45 s ahead', async () => {
    const skewed = await instance(ahead);
    const fair = await instance();
    for (const [i, service] of [skewed, fair, skewed, fair].entries()) {
      const sent = await postJson(`${service.url}/webhooks/generic`, {
        id: `f${i}`,
        sessionKey: 'cli:skew',
        sender: { id: 'u' },
        content: `part ${i}`,
      });
      expect(sent.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const outputs = async () =>
      (await fair.intake.store.outboxAfter(0, 100)).map(
        (r) => JSON.parse(r.body) as { content: string; merged: number },
      );
    await until(async () => (await outputs()).length > 0);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const all = await outputs();
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ merged: 4 });
  });
});
