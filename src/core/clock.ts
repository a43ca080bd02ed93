/** Time as the stages see it; injected so tests can drive every window with a fake clock. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/**
 * The real clock. Globals are looked up on every call, not captured, so a fake timer
 * installed after start-up (vitest's `vi.useFakeTimers()`) drives it too.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    // Past 2^31-1 ms Node fires a timer at once; a far deadline is reached by re-arming instead.
    const handle = setTimeout(fn, Math.min(ms, 2_147_483_647));
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
