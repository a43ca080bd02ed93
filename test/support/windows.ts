/**
 * The debounce window of tests whose instances cannot share a ManualClock: services in child
 * processes, or instances on one redis-server (its scripts stamp buffers with the server's own
 * clock). The window then passes in real time: the tests wait for what it flushes (`until`),
 * never for a span of their own. Short, so a flush follows its post within moments; long enough
 * that parts posted back to back by one test step still share a buffer on a loaded machine.
 */
export const REAL_TIME_WINDOW = { windowMs: 100, maxWaitMs: 1000 } as const;

/** REAL_TIME_WINDOW as the service process's settings (`startChild`'s environment). */
export const REAL_TIME_WINDOW_ENV = {
  INTAKE_DEBOUNCE_WINDOW_MS: String(REAL_TIME_WINDOW.windowMs),
  INTAKE_DEBOUNCE_MAX_WAIT_MS: String(REAL_TIME_WINDOW.maxWaitMs),
} as const;
