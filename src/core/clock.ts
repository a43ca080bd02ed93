/** Time as the stages see it; injected so tests can drive every window with a fake clock. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Run `fn` every `ms` until cleared; the timer never holds the process open. */
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/** Node fires a timer past 2^31-1 ms at once (setTimeout) or every 1 ms (setInterval). */
const LONGEST_TIMER_MS = 2_147_483_647;

/**
 * The real clock. Globals are looked up on every call, not captured, so a fake timer
 * installed after start-up (vitest's `vi.useFakeTimers()`) drives it too.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    // A far deadline is reached by re-arming instead.
    const handle = setTimeout(fn, Math.min(ms, LONGEST_TIMER_MS));
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (fn, ms) => {
    // A longer period is clamped: once every 24.8 days is as good as rarer for a sweep.
    const handle = setInterval(fn, Math.min(ms, LONGEST_TIMER_MS));
    handle.unref?.();
    return handle;
  },
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};
