import type { Clock } from '../core/clock.js';

/** A time limit on the injected clock. */
export interface Deadline {
  /** Aborts, with the reason given, when the time is up. */
  signal: AbortSignal;
  /** Milliseconds left (0 once past). */
  remaining(): number;
  /** Cancel the timer (the download finished first). */
  clear(): void;
}

/** Start a deadline `ms` from now on `clock`; its signal aborts with `reason()`. */
export function deadline(clock: Clock, ms: number, reason: () => Error): Deadline {
  const controller = new AbortController();
  const at = clock.now() + ms;
  const handle = clock.setTimeout(() => controller.abort(reason()), ms);
  return {
    signal: controller.signal,
    remaining: () => Math.max(0, at - clock.now()),
    clear: () => clock.clearTimeout(handle),
  };
}

/** Wait `ms` on `clock`; rejects with the signal's reason as soon as it aborts. */
export function wait(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal.reason as Error);
    };
    const handle = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settle with `promise`, or reject with the signal's reason as soon as it aborts (for work that ignores its signal). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
