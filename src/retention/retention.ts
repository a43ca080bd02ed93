import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { Outbox } from '../core/ports/index.js';

export interface RetentionOptions {
  clock: Clock;
  logger: Logger;
  outbox: Pick<Outbox, 'trimOutbox'>;
  retentionMs: number;
  retentionCount: number;
  /** The lowest seq an open event stream has not read: nothing after it is dropped. */
  keepAfterSeq(): number;
}

/** A minute between trims when the outbox grows slowly. */
const TRIM_INTERVAL_MS = 60_000;

/**
 * Drops retained output past `events.retentionMs` / `retentionCount` (never undelivered, never
 * unread by a stream): on the minute, and every tenth of `retentionCount` outputs (at least
 * 100) as the outbox grows. One trim at a time: a store may spread a long one over several
 * turns (SQLite), and trims started meanwhile would each add their own share to every turn. A
 * call during a trim runs one more after it, with the positions streams hold then.
 */
export class Retention {
  private sinceTrim = 0;
  private trimming = false;
  private again = false;
  private closed = false;
  private timer: unknown;

  constructor(private readonly options: RetentionOptions) {}

  start(): void {
    this.timer = this.options.clock.setInterval(() => void this.trim(), TRIM_INTERVAL_MS);
  }

  /** One output was committed. */
  added(): void {
    if (++this.sinceTrim >= Math.max(100, this.options.retentionCount / 10)) void this.trim();
  }

  async trim(): Promise<void> {
    this.sinceTrim = 0;
    if (this.trimming) {
      this.again = true;
      return;
    }
    this.trimming = true;
    try {
      do {
        this.again = false;
        const { clock, retentionMs, retentionCount } = this.options;
        const now = clock.now();
        await this.options.outbox.trimOutbox(now - retentionMs, retentionCount, this.options.keepAfterSeq(), now);
      } while (this.again && !this.closed);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'outbox trim failed');
    } finally {
      this.trimming = false;
    }
  }

  close(): void {
    this.closed = true;
    this.options.clock.clearInterval(this.timer);
  }
}
