import type { ConnectionLogger } from './connections.js';

/**
 * Shards whose master failed a call of the flush loop (a claim of due buffers, the next
 * deadline): passed over by those calls until the shard answers a ping again. A hung master
 * fails a call only after the background connection's command timeout (5 s or more), so
 * without this every claim of the other shards' buffers, and every flush behind it, would wait
 * that long for as long as the master is away. The ping is sent when a call passes the shard
 * over, one at a time: no timer of its own, and a master that is back is asked again at the
 * scheduler's next look.
 */
export class AwayShards {
  private readonly away = new Set<number>();
  private readonly probing = new Set<number>();
  /** Shards whose failure was logged and that have not answered a call since. */
  private readonly reported = new Set<number>();

  constructor(
    private readonly ping: (shard: number) => Promise<void>,
    private readonly logger: ConnectionLogger | undefined,
  ) {}

  /** Whether `shard` is to be passed over now (and if so, ask it whether it is back). */
  passes(shard: number): boolean {
    if (!this.away.has(shard)) return false;
    if (!this.probing.has(shard)) {
      this.probing.add(shard);
      this.ping(shard)
        .then(
          () => this.away.delete(shard),
          () => undefined,
        )
        .finally(() => this.probing.delete(shard));
    }
    return true;
  }

  /** `shard` failed a call: passed over until a ping answers (logged once per outage). */
  failed(shard: number, error: unknown): void {
    this.away.add(shard);
    if (this.reported.has(shard)) return;
    this.reported.add(shard);
    this.logger?.warn(
      { err: error, shard },
      `Redis store: shard ${shard} failed a call of the flush loop (its master away?); its buffers wait until it answers, the other shards' are claimed meanwhile`,
    );
  }

  /** `shard` answered a call of the flush loop. */
  answered(shard: number): void {
    if (!this.reported.delete(shard)) return;
    this.logger?.warn({ shard }, `Redis store: shard ${shard} answers again; its due buffers are claimed again`);
  }

  /** How many shards are passed over now. */
  get size(): number {
    return this.away.size;
  }
}
