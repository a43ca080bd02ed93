/** When a dialled or polled connection counts as healthy, so its reconnect backoff starts over. */

/**
 * How long a connection must stay open, receiving frames, before its backoff starts over: a
 * socket that opens and is closed or refreshed at once is a failure like one that never opened,
 * so a platform that drops every connection is dialled at the backoff's pace, not in a loop.
 */
export const HEALTHY_MS = 30_000;

/** Whether a connection opened at `openedAt` and ending at `now` was healthy: open HEALTHY_MS or longer, with frames received. */
export function wasHealthy(openedAt: number | undefined, frames: number, now: number): boolean {
  return openedAt !== undefined && frames > 0 && now - openedAt >= HEALTHY_MS;
}
