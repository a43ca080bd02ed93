/**
 * The grid deadlines are rounded up to, so one pass closes every buffer due in it: a twentieth
 * of the shortest hold (debounce window or notice hold), between 10 and 50 ms. With the
 * defaults (1.5 s and 1 s) that is 50 ms, and a buffer closes at most 5% of its hold late,
 * with a fifth of the scheduler passes a 10 ms grid would need under steady traffic
 * (`bench/ingest-cost.mjs` measures the difference).
 */
export function flushGridMs(holdsMs: readonly number[]): number {
  return Math.max(10, Math.min(50, Math.floor(Math.min(...holdsMs) / 20)));
}
