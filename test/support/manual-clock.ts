import { setImmediate as turn } from 'node:timers/promises';
import type { Clock } from '../../src/core/clock.js';

interface Timer {
  at: number;
  ms: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when a test says so. The code under test runs on it (receive times,
 * debounce deadlines, push backoff, download deadlines), while HTTP and I/O stay real. Tests
 * wait for timers to be armed (`armed`) instead of sleeping, and move time with `advance`
 * (which lets the I/O that fired timers start settle in between) or `tick` (synchronous).
 */
export class ManualClock implements Clock {
  private time: number;
  private seq = 0;
  private readonly timers = new Map<number, Timer>();
  /** Each interval's handle, and the timeout that fires it next. */
  private readonly intervals = new Map<number, number>();
  private readonly watchers = new Set<() => boolean>();

  constructor(start = Math.floor(Date.now() / 1000) * 1000) {
    this.time = start;
  }

  now = (): number => this.time;

  setTimeout = (fn: () => void, ms: number): unknown => {
    const seq = ++this.seq;
    this.timers.set(seq, { at: this.time + Math.max(0, ms), ms, seq, fn });
    for (const watcher of this.watchers) if (watcher()) this.watchers.delete(watcher);
    return seq;
  };

  clearTimeout = (handle: unknown): void => {
    this.timers.delete(handle as number);
  };

  /** An interval is a timeout armed again each time it fires, under one handle. */
  setInterval = (fn: () => void, ms: number): unknown => {
    const handle = ++this.seq;
    const arm = (): void => {
      const timer = this.setTimeout(
        () => {
          arm();
          fn();
        },
        Math.max(1, ms),
      );
      this.intervals.set(handle, timer as number);
    };
    arm();
    return handle;
  };

  clearInterval = (handle: unknown): void => {
    const timer = this.intervals.get(handle as number);
    if (timer !== undefined) this.timers.delete(timer);
    this.intervals.delete(handle as number);
  };

  /** The delays the pending timers were armed with. */
  pending(): number[] {
    return [...this.timers.values()].map((timer) => timer.ms);
  }

  /** Resolves once a timer armed with `ms` is pending. */
  armed(ms: number): Promise<void> {
    const condition = () => this.pending().includes(ms);
    return new Promise((resolve) => {
      if (condition()) return resolve();
      this.watchers.add(() => (condition() ? (resolve(), true) : false));
    });
  }

  /** Move time forward by `ms` at once, firing every timer that falls due, in order. */
  tick(ms: number): void {
    const until = this.time + ms;
    for (let next = this.due(until); next; next = this.due(until)) {
      this.timers.delete(next.seq);
      this.time = next.at;
      next.fn();
    }
    this.time = until;
  }

  /** Move time forward by `ms`, firing due timers in order and letting what they start settle. */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    await this.settle();
    for (let next = this.due(until); next; next = this.due(until)) {
      this.timers.delete(next.seq);
      this.time = Math.max(this.time, next.at);
      next.fn();
      await this.settle();
    }
    this.time = until;
    await this.settle();
  }

  /** Let promise chains and I/O callbacks run (a few turns of the real event loop). */
  async settle(turns = 5): Promise<void> {
    for (let i = 0; i < turns; i++) await turn();
  }

  private due(until: number): Timer | undefined {
    let first: Timer | undefined;
    for (const timer of this.timers.values())
      if (timer.at <= until && (!first || timer.at < first.at || (timer.at === first.at && timer.seq < first.seq)))
        first = timer;
    return first;
  }
}
