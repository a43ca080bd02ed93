import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';

export interface ClaimPollsOptions<T> {
  clock: Clock;
  logger: Logger;
  /** Polls waiting at once; a poll past it is answered `full`. */
  max: number;
  /** Take up to `max` of what is due now (none: nothing is). */
  take(max: number): Promise<T[]>;
  /** When the store next has something due (a retry, a lease running out), if it knows. */
  next(): Promise<number | undefined>;
  /** Look again this often while polls wait, whatever `next` says (another instance's commits, a store's own clock). */
  recheckMs: number;
  /** What was taken for a poll that ended meanwhile (its client went away, its wait ran out). */
  giveBack(items: T[]): Promise<void>;
}

interface Poll<T> {
  max: number;
  done: boolean;
  timer: unknown;
  resolve(items: T[]): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * Long polls, answered in the order they came as soon as something is due. The store is looked
 * at when told (`wake`: a commit here or on another instance, an ack), and while polls wait on
 * one timer at the earlier of `next()` and `recheckMs` from now: one pass at a time, another
 * if asked meanwhile, never a timer per poll beyond its own end.
 */
export class ClaimPolls<T> {
  private readonly waiting: Array<Poll<T>> = [];
  private draining = false;
  private pumping = false;
  private again = false;
  private timer: unknown;
  private timerAt = Infinity;

  constructor(private readonly options: ClaimPollsOptions<T>) {}

  get size(): number {
    return this.waiting.length;
  }

  /** Up to `max` items, as soon as one is due, or none after `waitMs`; `full` when too many polls wait. */
  async take(max: number, waitMs: number, signal?: AbortSignal): Promise<T[] | 'full'> {
    if (this.draining) return [];
    const first = await this.options.take(max);
    if (first.length > 0 || waitMs === 0 || this.draining || signal?.aborted) return this.handOver(first, signal);
    if (this.waiting.length >= this.options.max) return 'full';
    return new Promise<T[]>((resolve) => {
      const poll: Poll<T> = { max, done: false, timer: undefined, resolve, signal, onAbort: undefined };
      poll.timer = this.options.clock.setTimeout(() => this.finish(poll, []), waitMs);
      if (signal) {
        poll.onAbort = () => this.finish(poll, []);
        signal.addEventListener('abort', poll.onAbort, { once: true });
      }
      this.waiting.push(poll);
      // Something may have come while the first look ran.
      this.wake();
    });
  }

  /** Look at the store for the waiting polls (coalesced; after the caller's synchronous work, a store commit's included). */
  wake(): void {
    if (this.draining || this.waiting.length === 0) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    queueMicrotask(() => {
      void this.pump().finally(() => {
        this.pumping = false;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
    });
  }

  /** Every waiting poll answers none now; polls from now on answer at once. */
  drain(): void {
    this.draining = true;
    for (const poll of [...this.waiting]) this.finish(poll, []);
  }

  close(): void {
    this.drain();
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async pump(): Promise<void> {
    const { clock, logger } = this.options;
    for (let poll = this.waiting[0]; poll && !this.draining; poll = this.waiting[0]) {
      let items: T[];
      try {
        items = await this.options.take(poll.max);
      } catch (error) {
        logger.error({ err: error }, 'cannot claim from the store; waiting polls look again in a second');
        this.arm(clock.now() + this.options.recheckMs);
        return;
      }
      if (items.length === 0) break;
      if (poll.done) await this.options.giveBack(items);
      else this.finish(poll, items);
    }
    if (this.waiting.length === 0 || this.draining) return;
    const next = await this.options.next().catch(() => undefined);
    this.arm(Math.min(clock.now() + this.options.recheckMs, next ?? Infinity));
  }

  /** One timer for the earliest reason to look again. */
  private arm(at: number): void {
    const { clock } = this.options;
    if (this.draining || at >= this.timerAt) return;
    if (this.timer !== undefined) clock.clearTimeout(this.timer);
    this.timerAt = at;
    // Never sooner than a few ms: a store whose clock runs behind ours would otherwise spin us.
    this.timer = clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.wake();
      },
      Math.max(MIN_RECHECK_MS, at - clock.now()),
    );
  }

  private async handOver(items: T[], signal: AbortSignal | undefined): Promise<T[]> {
    if (!signal?.aborted || items.length === 0) return items;
    await this.options.giveBack(items);
    return [];
  }

  private finish(poll: Poll<T>, items: T[]): void {
    if (poll.done) return;
    poll.done = true;
    this.options.clock.clearTimeout(poll.timer);
    if (poll.onAbort) poll.signal?.removeEventListener('abort', poll.onAbort);
    const at = this.waiting.indexOf(poll);
    if (at !== -1) this.waiting.splice(at, 1);
    poll.resolve(items);
  }
}

const MIN_RECHECK_MS = 10;
