import { describe, expect, it } from 'vitest';
import { backoffCeilingMs, backoffMs } from '../../src/core/backoff.js';

describe('backoff', () => {
  const range = { minMs: 100, maxMs: 1000 };

  it('doubles the ceiling from minMs per failure and holds it at maxMs', () => {
    expect([0, 1, 2, 3, 4, 5, 60].map((failures) => backoffCeilingMs(failures, range))).toEqual([
      100, 200, 400, 800, 1000, 1000, 1000,
    ]);
  });

  it('treats a negative failure count as the first wait', () => {
    expect(backoffCeilingMs(-1, range)).toBe(100);
  });

  it('draws each wait between half and all of its ceiling, in whole milliseconds', () => {
    expect([0, 3, 9].map((failures) => backoffMs(failures, range, () => 0))).toEqual([50, 400, 500]);
    expect([0, 3, 9].map((failures) => backoffMs(failures, range, () => 0.999_999))).toEqual([100, 800, 1000]);
    expect(backoffMs(1, range, () => 0.5)).toBe(150);
  });

  it('keeps doubling without maxMs, up to 2^30 times minMs, never to Infinity', () => {
    const unbounded = { minMs: 1, maxMs: Number.POSITIVE_INFINITY };
    expect([10, 30, 1000].map((failures) => backoffCeilingMs(failures, unbounded))).toEqual([1024, 2 ** 30, 2 ** 30]);
  });
});
