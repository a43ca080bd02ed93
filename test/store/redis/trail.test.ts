import { afterEach, describe, expect, it } from 'vitest';
import type { TraceEntry } from '../../../src/events/trace.js';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { until } from '../../support/helpers.js';
import { useRedis } from '../../support/redis.js';

/* The verdict trail kept in Redis (src/store/redis/trail.ts): numbering, lookups by name, bounds. */

const redis = useRedis();
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await redis.admin.flushall();
});

async function open(options: { retentionMs?: number; maxEntries?: number } = {}) {
  const store = await RedisStore.open(redis.url, { keyPrefix: 'tr', commandTimeoutMs: 3000 });
  cleanups.push(() => store.close());
  return store.openTrail({
    instance: 'a:1',
    retentionMs: options.retentionMs ?? 60_000,
    maxEntries: options.maxEntries ?? 1000,
  });
}

const verdict = (id: string, extra: Partial<TraceEntry> = {}): Omit<TraceEntry, 'n'> => ({
  at: 1_700_000_000_000,
  channel: 'generic',
  kind: 'verdict',
  id,
  platformId: `p-${id}`,
  verdict: 'accepted',
  ...extra,
});

describe('the trail in Redis', () => {
  it('numbers entries in order across writes, names the writing instance, and finds them by any name they carry', async () => {
    const trail = await open();
    for (let i = 1; i <= 5; i++) trail.publish(verdict(`m${i}`));
    await until(async () => (await trail.after(0, 100)).length === 5);
    trail.publish({ at: 1, channel: 'generic', kind: 'batch', id: 'out-1', messageIds: ['p-m2', 'p-m3'] });
    await until(async () => (await trail.after(0, 100)).length === 6);
    const all = await trail.after(0, 100);
    expect(all.map((entry) => entry.id)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'out-1']);
    expect(all.every((entry) => entry.instance === 'a:1')).toBe(true);
    const numbers = all.map((entry) => entry.n);
    expect([...numbers].sort((a, b) => a - b)).toEqual(numbers);
    expect(new Set(numbers).size).toBe(6);
    expect(await trail.last()).toBe(numbers[5]);
    expect((await trail.after(numbers[3]!, 100)).map((entry) => entry.id)).toEqual(['m5', 'out-1']);
    expect((await trail.naming(['p-m3'])).map((entry) => entry.id)).toEqual(['m3', 'out-1']);
    expect((await trail.naming(['out-1', 'm1'])).map((entry) => entry.id)).toEqual(['out-1', 'm1']);
    expect(await trail.naming(['nothing'])).toEqual([]);
  });

  it('keeps at most trace.maxEntries entries', async () => {
    const trail = await open({ maxEntries: 10 });
    for (let i = 1; i <= 30; i++) trail.publish(verdict(`m${i}`));
    await until(async () => (await trail.after(0, 100)).at(-1)?.id === 'm30');
    expect((await trail.after(0, 100)).map((entry) => entry.id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `m${i + 21}`),
    );
    expect(await trail.naming(['m1'])).toEqual([]);
  });

  it('forgets entries and their names older than trace.retentionMs', async () => {
    const trail = await open({ retentionMs: 200 });
    trail.publish(verdict('old'));
    await until(async () => (await trail.after(0, 10)).length === 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    trail.publish(verdict('new'));
    await until(async () => (await trail.after(0, 10)).some((entry) => entry.id === 'new'));
    expect((await trail.after(0, 10)).map((entry) => entry.id)).toEqual(['new']);
    expect(await redis.admin.exists('{tr}:tx:old')).toBe(0);
  });

  it('tells every subscriber of every entry, whichever store wrote it', async () => {
    const [a, b] = [await open(), await open()];
    const seen: string[] = [];
    b.subscribe((entry) => seen.push(`${entry.id}@${entry.instance}`));
    await b.last(); // the tail's start point is settled
    a.publish(verdict('from-a'));
    await until(() => seen.length === 1);
    expect(seen).toEqual(['from-a@a:1']);
  });
});
