/** The reconnect pacing every connection we dial or poll shares (one formula, so they never drift apart). */

/** A channel's reconnect settings: the first wait, and the longest. */
export interface BackoffRange {
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
}

/**
 * How long a connection must stay open, receiving frames, before its backoff starts over: a
 * socket that opens and is closed or refreshed at once is a failure like one that never opened,
 * so a platform that drops every connection is dialled at the backoff's pace, not in a loop.
 */
export const HEALTHY_MS = 30_000;

/**
 * The wait before a reconnect after `failures` failures in a row (0: the connection before it
 * was healthy): `reconnectMinMs` doubling per failure up to `reconnectMaxMs`, jittered to between
 * half and all of it, so connections that failed together are not all dialled again at once.
 * `random` is in [0, 1).
 */
export function backoffMs(failures: number, range: BackoffRange, random: () => number): number {
  const ceiling = Math.min(range.reconnectMaxMs, range.reconnectMinMs * 2 ** Math.min(Math.max(failures, 0), 30));
  return Math.round(ceiling * (0.5 + random() / 2));
}

/** Whether a connection opened at `openedAt` and ending at `now` was healthy: open HEALTHY_MS or longer, with frames received. */
export function wasHealthy(openedAt: number | undefined, frames: number, now: number): boolean {
  return openedAt !== undefined && frames > 0 && now - openedAt >= HEALTHY_MS;
}
