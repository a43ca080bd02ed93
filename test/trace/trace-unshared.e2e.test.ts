import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { useRedis } from '../support/redis.js';
import { REAL_TIME_WINDOW } from '../support/windows.js';

/* trace.shared false on Redis: each instance keeps its own trail, and Redis does no trail work. */

const redis = useRedis();
const services: Running[] = [];
afterAll(async () => {
  await Promise.all(services.map((service) => service.stop()));
});

const instance = async (): Promise<Running> => {
  const service = await startService({
    store: redis.url,
    redis: { keyPrefix: 'unshared', commandTimeoutMs: 3000 },
    debounce: { ...REAL_TIME_WINDOW, maxMessages: 10 },
    trace: { shared: false },
  });
  services.push(service);
  return service;
};

describe('the verdict trail with trace.shared false on a shared store', () => {
  it('keeps each instance its own trail: A traces what it admitted, B says it knows nothing, and Redis holds no trail', async () => {
    const [a, b] = [await instance(), await instance()];
    expect(
      (
        await postJson(`${a.url}/webhooks/generic`, {
          id: 'u-1',
          sessionKey: 'cli:u',
          sender: { id: 'u' },
          content: 'hi',
        })
      ).status,
    ).toBe(200);
    await until(async () => (await a.intake.store.outboxAfter(0, 10)).length === 1);
    const onA = await fetch(`${a.url}/v1/trace/u-1`);
    expect(onA.status).toBe(200);
    // B never saw the delivery: it knows nothing of it, or (when B's scheduler took the flush,
    // as any instance may) only the batch it flushed.
    const onB = await fetch(`${b.url}/v1/trace/u-1`);
    const seenByB = (await onB.json()) as { error?: { message: string }; arrivals?: unknown[] };
    if (onB.status === 404) expect(seenByB.error?.message).toMatch(/seen by this process/);
    else expect(seenByB.arrivals).toEqual([]);
    const admin = new Redis(redis.url);
    expect(await admin.keys('{unshared}:trail*')).toEqual([]);
    admin.disconnect();
  });
});
