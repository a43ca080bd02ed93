import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { AwayShards } from '../../../src/store/redis/away.js';

describe('shards passed over by the flush loop', () => {
  it('passes a shard over from its failure until a ping answers, one ping at a time, and logs the outage once', async () => {
    const logged: string[] = [];
    const pings: Array<{ shard: number; answer: (ok: boolean) => void }> = [];
    const away = new AwayShards(
      (shard) =>
        new Promise<void>((resolve, reject) => {
          pings.push({ shard, answer: (ok) => (ok ? resolve() : reject(new Error('still away'))) });
        }),
      {
        warn: (_fields, message) => {
          logged.push(message);
        },
      },
    );

    expect(away.passes(2)).toBe(false);
    away.failed(2, new Error('timeout'));
    away.failed(2, new Error('timeout')); // a deadline read failing too: one outage
    expect([away.passes(2), away.passes(2), away.passes(0)]).toEqual([true, true, false]);
    expect(pings.map((p) => p.shard)).toEqual([2]); // the second pass did not ping again meanwhile
    pings[0]?.answer(false);
    await turn();
    expect(away.passes(2)).toBe(true); // still away: pinged again
    expect(pings).toHaveLength(2);
    pings[1]?.answer(true);
    await turn();
    expect(away.passes(2)).toBe(false);
    expect(away.size).toBe(0);
    away.answered(2);
    away.answered(2);
    expect(logged).toEqual([
      expect.stringContaining('shard 2 failed a call of the flush loop'),
      expect.stringContaining('shard 2 answers again'),
    ]);
  });
});
