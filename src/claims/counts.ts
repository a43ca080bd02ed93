import type { Clock } from '../core/clock.js';
import type { PushOutcome, PushQueue } from '../core/ports/index.js';

export interface DeliveryCountsOptions {
  store: Pick<PushQueue, 'deliveryCounts'>;
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  /** How often the counts are read from the store again. @default never (only this instance moves them) */
  refreshMs?: number;
}

/**
 * The outbox's undelivered and dead records, for `agent.maxPending`'s backpressure and the
 * delivery metrics: counted as this instance commits and answers, read from the store at start,
 * after a requeue and, on a store other instances share, every `refreshMs`. Those instances
 * commit and answer claims too: an output committed here and acked on another would otherwise
 * count here for good, and past `agent.maxPending` ingest would answer outbox_full forever.
 */
export class DeliveryCounts {
  pending = 0;
  dead = 0;
  private timer: unknown;
  private closed = false;

  constructor(private readonly options: DeliveryCountsOptions) {}

  /** Read the counts now, then every `refreshMs`. */
  async start(): Promise<void> {
    await this.refresh();
    this.later();
  }

  /** Read the cluster-wide counts again. */
  async refresh(): Promise<void> {
    const counts = await this.options.store.deliveryCounts();
    this.pending = counts.pending;
    this.dead = counts.dead;
  }

  /** An outcome recorded on this instance: a retry stays pending. */
  counted(outcome: PushOutcome): void {
    if (outcome.state !== 'retry') this.pending--;
    if (outcome.state === 'dead') this.dead++;
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
  }

  private later(): void {
    const { refreshMs, clock } = this.options;
    if (refreshMs === undefined || this.closed) return;
    this.timer = clock.setTimeout(() => {
      void this.refresh()
        .catch(() => undefined)
        .finally(() => this.later());
    }, refreshMs);
  }
}
