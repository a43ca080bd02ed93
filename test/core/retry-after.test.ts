import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/core/retry-after.js';

const now = Date.UTC(2030, 0, 1, 12, 0, 0);

describe('retryAfterMs', () => {
  it('reads delay-seconds', () => {
    expect(retryAfterMs('0', now, 60_000)).toBe(0);
    expect(retryAfterMs('5', now, 60_000)).toBe(5_000);
    expect(retryAfterMs(' 2 ', now, 60_000)).toBe(2_000);
    expect(retryAfterMs('1.5', now, 60_000)).toBe(1_500);
  });

  it('reads an HTTP date against the clock it is given, not the machine time', () => {
    expect(retryAfterMs('Tue, 01 Jan 2030 12:00:30 GMT', now, 60_000)).toBe(30_000);
    expect(retryAfterMs('Tue, 01 Jan 2030 12:00:30 GMT', now + 10_000, 60_000)).toBe(20_000);
  });

  it('waits nothing for a date in the past', () => {
    expect(retryAfterMs('Tue, 01 Jan 2030 11:59:00 GMT', now, 60_000)).toBe(0);
  });

  it('clamps long waits to maxMs', () => {
    expect(retryAfterMs('86400', now, 60_000)).toBe(60_000);
    expect(retryAfterMs('Wed, 02 Jan 2030 12:00:00 GMT', now, 60_000)).toBe(60_000);
  });

  it('takes the first of repeated headers', () => {
    expect(retryAfterMs(['3', '100'], now, 60_000)).toBe(3_000);
  });

  it('ignores an absent, empty, negative or unreadable header', () => {
    for (const header of [undefined, '', '  ', '-5', '1e3', 'soon', 'NaN', []]) {
      expect([header, retryAfterMs(header, now, 60_000)]).toEqual([header, undefined]);
    }
  });
});
