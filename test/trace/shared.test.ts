import { describe, expect, it } from 'vitest';
import type { TraceEntry, TrailLog } from '../../src/events/trace.js';
import { sharedTrail } from '../../src/trace/shared.js';

/** A store's trail in an array: `naming` finds entries by id, platform id, merged ids or fuzzy key, and counts the calls. */
function arrayLog(entries: TraceEntry[]): TrailLog & { calls: string[][] } {
  const calls: string[][] = [];
  const names = (entry: TraceEntry) => [entry.id, entry.platformId, ...(entry.messageIds ?? []), entry.fuzzyKey];
  return {
    calls,
    publish: () => undefined,
    last: async () => entries.at(-1)?.n ?? 0,
    after: async (n, limit) => entries.filter((entry) => entry.n > n).slice(0, limit),
    naming: async (wanted) => {
      calls.push([...wanted]);
      return entries.filter((entry) => names(entry).some((name) => name !== undefined && wanted.includes(name)));
    },
    subscribe: () => () => undefined,
  };
}

const at = 1_700_000_000_000;
const entries: TraceEntry[] = [
  {
    n: 10,
    at,
    instance: 'a',
    channel: 'qq-a',
    kind: 'verdict',
    id: 'in-1',
    platformId: 'p-1',
    bot: '1',
    verdict: 'accepted',
  },
  {
    n: 20,
    at,
    instance: 'b',
    channel: 'qq-b',
    kind: 'verdict',
    id: 'in-2',
    platformId: 'p-2',
    bot: '2',
    verdict: 'correlated',
    messageIds: ['p-1'],
  },
  { n: 30, at, instance: 'a', channel: 'qq-a', kind: 'verdict', id: 'in-3', platformId: 'p-3', verdict: 'accepted' },
  { n: 40, at, instance: 'a', channel: 'qq-a', kind: 'batch', id: 'out-1', seq: 1, messageIds: ['p-1', 'p-3'] },
  { n: 50, at, instance: 'b', channel: 'qq-a', kind: 'delivery', id: 'out-1', seq: 1, state: 'delivered', attempts: 1 },
  { n: 60, at, instance: 'b', channel: 'other', kind: 'verdict', id: 'in-9', platformId: 'p-9', verdict: 'accepted' },
];

describe('the shared trail', () => {
  it("follows a correlated copy's ingest id to the output it joined, its other parts and its push attempts, in three reads", async () => {
    const log = arrayLog(entries);
    const trace = await sharedTrail(log).lookup('in-2');
    expect(trace.outputs).toEqual(['out-1']);
    expect(trace.entries.map((entry) => entry.n)).toEqual([10, 20, 30, 40, 50]);
    expect(log.calls).toHaveLength(3);
    expect(log.calls[0]).toEqual(['in-2']);
  });

  it("follows a fuzzy duplicate to the message it repeats and that message's output, not to an earlier one of the same words", async () => {
    const key = 'fz-key';
    const log = arrayLog([
      { n: 1, at, channel: 'generic', kind: 'verdict', id: 'in-old', verdict: 'accepted', fuzzyKey: key },
      { n: 2, at, channel: 'generic', kind: 'batch', id: 'out-old', seq: 1, messageIds: ['in-old'] },
      { n: 3, at, channel: 'generic', kind: 'verdict', id: 'in-new', verdict: 'accepted', fuzzyKey: key },
      { n: 4, at, channel: 'generic', kind: 'verdict', id: 'in-double', verdict: 'fuzzy_duplicate', fuzzyKey: key },
      { n: 5, at, channel: 'generic', kind: 'batch', id: 'out-new', seq: 2, messageIds: ['in-new'] },
      { n: 6, at, channel: 'generic', kind: 'delivery', id: 'out-new', seq: 2, state: 'delivered', attempts: 1 },
    ]);
    const trace = await sharedTrail(log).lookup('in-double');
    expect(trace.outputs).toEqual(['out-new']);
    expect(trace.entries.map((entry) => entry.n)).toEqual([3, 4, 5, 6]);
    expect(trace.entries[1]).toMatchObject({ id: 'in-double', messageIds: ['in-new'] });
    // The duplicate's own read and its key's in the first round, then the message it repeats, then its output.
    expect(log.calls).toEqual([['in-double'], [key], ['in-new'], ['out-new']]);
  });

  it('finds nothing for an id no entry names, in one read', async () => {
    const log = arrayLog(entries);
    expect(await sharedTrail(log).lookup('unknown')).toEqual({ entries: [], outputs: [] });
    expect(log.calls).toEqual([['unknown']]);
  });
});
