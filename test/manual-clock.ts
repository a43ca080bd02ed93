import { setImmediate as turn } from 'node:timers/promises';
import type { Clock } from '../src/clock.js';

/**
 * A clock that moves only when a test says so. The service under test runs on it (receive
 * times, debounce deadlines, push backoff), while HTTP and I/O stay real; `advance` fires due
 * timers in time order and lets the I/O they start settle in between.
 */
export class ManualClock implements Clock {
  private t: number;
  private next = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = Math.floor(Date.now() / 1000) * 1000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.next++;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Move time forward by `ms`, firing every timer that falls due, oldest first. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      await this.settle();
      let first: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (entry[1].at <= target && (!first || entry[1].at < first[1].at)) first = entry;
      if (!first) break;
      this.timers.delete(first[0]);
      this.t = Math.max(this.t, first[1].at);
      first[1].fn();
    }
    this.t = target;
    await this.settle();
  }

  /** Let promise chains and I/O callbacks started by timers run (a few turns of the real event loop). */
  async settle(turns = 5): Promise<void> {
    for (let i = 0; i < turns; i++) await turn();
  }
}
