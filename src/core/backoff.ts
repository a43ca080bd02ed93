/**
 * The one retry pacing every loop shares (reconnects, pushes, downloads, flushes, the Redis
 * tail), so the formulas never drift apart.
 *
 * The ceiling starts at `minMs` and doubles per failure up to `maxMs`. A jittered wait is drawn
 * between half and all of its ceiling ("equal jitter" in Marc Brooker, Exponential Backoff And
 * Jitter, aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter): callers that failed
 * together spread out, yet none retries sooner than half its ceiling.
 */

/** A retry loop's pacing: the first ceiling, and the longest. */
export interface BackoffRange {
  /** The ceiling of the first wait (it doubles per failure). */
  readonly minMs: number;
  /** The ceiling never grows past this. */
  readonly maxMs: number;
}

/** The ceiling after `failures` failures in a row (0: the first wait): `minMs` doubled per failure, at most `maxMs`. */
export function backoffCeilingMs(failures: number, range: BackoffRange): number {
  // Past 2^30 the doubling only overflows; every real range is capped long before.
  return Math.min(range.maxMs, range.minMs * 2 ** Math.min(Math.max(failures, 0), 30));
}

/**
 * The jittered wait after `failures` failures in a row: between half and all of the ceiling,
 * in whole milliseconds. `random` is in [0, 1).
 */
export function backoffMs(failures: number, range: BackoffRange, random: () => number): number {
  return Math.round(backoffCeilingMs(failures, range) * (0.5 + random() / 2));
}
