import { describe, expect, it } from 'vitest';
import type { TraceEntry } from '../../src/events/trace.js';
import { Trail } from '../../src/trace/trail.js';

const verdict = (id: string, at: number, extra: Partial<TraceEntry> = {}): Omit<TraceEntry, 'n'> => ({
  at: 1_700_000_000_000 + at,
  channel: 'generic',
  kind: 'verdict',
  id,
  sessionKey: 'cli:a',
  sender: { id: 'u', name: 'U' },
  preview: `text ${id}`,
  verdict: 'accepted',
  ...extra,
});

describe('Trail', () => {
  it('gives every entry back with exactly the fields it was published with', () => {
    const trail = new Trail();
    const published: Array<Omit<TraceEntry, 'n'>> = [
      verdict('m1', 0, { platformId: 'p1', fuzzyKey: 'fz1' }),
      { ...verdict('m2', 1), verdict: 'duplicate', reason: 'platform id m2 was already taken' },
      {
        at: 2,
        channel: 'generic',
        kind: 'verdict',
        id: '',
        verdict: 'rejected',
        reason: 'bad_json: Body is not valid JSON',
      },
      {
        at: 3,
        channel: 'generic',
        kind: 'batch',
        id: 'out_1',
        seq: 7,
        sessionKey: 'cli:a',
        messageIds: ['p1', 'm2'],
        reason: 'window',
        state: 'none',
      },
      {
        at: 4,
        channel: 'generic',
        kind: 'delivery',
        id: 'out_1',
        seq: 7,
        sessionKey: 'cli:a',
        state: 'pending',
        attempts: 2,
        lastError: 'HTTP 503',
      },
      {
        at: 5,
        channel: 'generic',
        kind: 'delivery',
        id: 'out_1',
        seq: 0,
        sessionKey: 'cli:a',
        state: 'delivered',
        attempts: 3,
      },
    ];
    expect(published.map((entry) => trail.publish(entry))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(trail.after(0, 100)).toEqual(published.map((entry, i) => ({ ...entry, n: i + 1 })));
    expect(trail.after(4, 1)).toEqual([{ ...published[4], n: 5 }]);
    expect(trail.last).toBe(6);
  });

  it('keeps every verdict and delivery state apart, the ones for context, access and budgets too', () => {
    const trail = new Trail();
    const verdicts = [
      'accepted',
      'duplicate',
      'fuzzy_duplicate',
      'correlated',
      'ignored',
      'looped',
      'rejected',
      'context',
      'denied',
      'over_budget',
    ] as const;
    const states = ['none', 'pending', 'delivered', 'dead'] as const;
    for (const [i, value] of verdicts.entries())
      trail.publish({ ...verdict(`v${i}`, i), verdict: value, state: states[i % 4] });
    expect(trail.after(0, 100).map((entry) => [entry.verdict, entry.state])).toEqual(
      verdicts.map((value, i) => [value, states[i % 4]]),
    );
  });

  it('forgets the oldest entries past its capacity, keeping order and numbers', () => {
    const trail = new Trail({ capacity: 3 });
    for (let i = 1; i <= 7; i++) trail.publish(verdict(`m${i}`, i));
    expect(trail.after(0, 10).map((entry) => [entry.n, entry.id])).toEqual([
      [5, 'm5'],
      [6, 'm6'],
      [7, 'm7'],
    ]);
    expect(trail.after(5, 10).map((entry) => entry.id)).toEqual(['m6', 'm7']);
    expect(trail.lookup('m4').entries).toEqual([]);
    expect(trail.lookup('m6').entries.map((entry) => entry.n)).toEqual([6]);
  });

  it('reads no entry older than its retention, and names the instance on entries published without one', () => {
    let now = 1_700_000_000_000;
    const trail = new Trail({ retentionMs: 1000, now: () => now, instance: 'here:1' });
    trail.publish(verdict('old', 0));
    now += 600;
    trail.publish(verdict('new', 600, { instance: 'there:2', bot: '10001' }));
    now += 500;
    expect(trail.after(0, 10).map((entry) => [entry.id, entry.instance, entry.bot])).toEqual([
      ['new', 'there:2', '10001'],
    ]);
    expect(trail.lookup('old').entries).toEqual([]);
    now -= 500;
    expect(trail.after(0, 10).map((entry) => [entry.id, entry.instance])).toEqual([
      ['old', 'here:1'],
      ['new', 'there:2'],
    ]);
  });

  it('finds by platform id, answer id or output id: the verdicts, the batch and its deliveries', () => {
    const trail = new Trail();
    trail.publish(verdict('a1', 0, { platformId: 'pa' }));
    trail.publish(verdict('other', 1));
    trail.publish(verdict('b1', 2));
    trail.publish({
      at: 3,
      channel: 'generic',
      kind: 'batch',
      id: 'out_9',
      seq: 1,
      messageIds: ['pa', 'b1'],
      state: 'pending',
    });
    trail.publish({
      at: 4,
      channel: 'generic',
      kind: 'delivery',
      id: 'out_9',
      seq: 1,
      state: 'delivered',
      attempts: 1,
    });
    for (const id of ['pa', 'a1', 'b1', 'out_9']) {
      const trace = trail.lookup(id);
      expect(trace.outputs).toEqual(['out_9']);
      expect(trace.entries.map((entry) => entry.n)).toEqual([1, 3, 4, 5]);
    }
    expect(trail.lookup('other')).toEqual({ entries: [{ ...verdict('other', 1), n: 2 }], outputs: [] });
  });

  it('tells subscribers each entry as published, until they unsubscribe', () => {
    const trail = new Trail();
    const seen: TraceEntry[] = [];
    const stop = trail.subscribe((entry) => seen.push(entry));
    trail.publish(verdict('m1', 0));
    stop();
    trail.publish(verdict('m2', 1));
    expect(seen).toEqual([{ ...verdict('m1', 0), n: 1 }]);
  });
});
