import type { Clock } from '../../src/clock.js';

interface Timer {
  at: number;
  ms: number;
  seq: number;
  fn: () => void;
}

/** A clock that moves only when told to; tests wait for timers to be armed instead of sleeping. */
export class ManualClock implements Clock {
  private time: number;
  private seq = 0;
  private readonly timers = new Map<number, Timer>();
  private readonly watchers = new Set<() => boolean>();

  constructor(start = Date.UTC(2030, 0, 1)) {
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

  /** Move time forward by `ms`, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const next = [...this.timers.values()].filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.timers.delete(next.seq);
      this.time = next.at;
      next.fn();
    }
    this.time = until;
  }
}
