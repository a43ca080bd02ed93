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

/**
 * A clock as a library user may hand one in: `setInterval`/`clearInterval` may be missing (a
 * clock written before they were part of `Clock`); `withIntervals` then runs them on its
 * `setTimeout`, re-armed after each run.
 */
export type ClockInput = Omit<Clock, 'setInterval' | 'clearInterval'> &
  Partial<Pick<Clock, 'setInterval' | 'clearInterval'>>;

/** The clock itself when it has intervals, else the same clock with intervals made of its timeouts. */
export function withIntervals(clock: ClockInput): Clock {
  if (clock.setInterval && clock.clearInterval) return clock as Clock;
  const timers = new Map<object, unknown>();
  return {
    now: () => clock.now(),
    setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
    clearTimeout: (handle) => clock.clearTimeout(handle),
    setInterval: (fn, ms) => {
      const handle = {};
      const arm = (): void => {
        timers.set(
          handle,
          clock.setTimeout(() => {
            if (!timers.has(handle)) return;
            arm();
            fn();
          }, ms),
        );
      };
      arm();
      return handle;
    },
    clearInterval: (handle) => {
      const timer = timers.get(handle as object);
      if (timer === undefined) return;
      timers.delete(handle as object);
      clock.clearTimeout(timer);
    },
  };
}
