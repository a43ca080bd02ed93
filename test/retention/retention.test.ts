import { describe, expect, it } from 'vitest';
import { Retention } from '../../src/retention/retention.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

describe('Retention on the injected clock', () => {
  it("trims on the minute by the clock it is given, with the window and the streams' position of that moment, and stops when closed", async () => {
    const clock = new ManualClock(Date.UTC(2031, 0, 1));
    const trims: Array<[olderThan: number, keepCount: number, keepAfterSeq: number, now: number]> = [];
    let unread = 7;
    const retention = new Retention({
      clock,
      logger: silent,
      retentionMs: 3_600_000,
      retentionCount: 10_000,
      keepAfterSeq: () => unread,
      outbox: {
        trimOutbox: async (...args) => {
          trims.push(args as (typeof trims)[number]);
          return 0;
        },
      },
    });
    const start = clock.now();
    retention.start();
    await clock.advance(59_999);
    expect(trims).toEqual([]);
    await clock.advance(1);
    expect(trims).toEqual([[start + 60_000 - 3_600_000, 10_000, 7, start + 60_000]]);
    unread = 9;
    await clock.advance(60_000);
    expect(trims.at(-1)).toEqual([start + 120_000 - 3_600_000, 10_000, 9, start + 120_000]);
    retention.close();
    expect(clock.pending()).toEqual([]);
    await clock.advance(600_000);
    expect(trims).toHaveLength(2);
  });
});
