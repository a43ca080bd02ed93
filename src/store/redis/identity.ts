import { nanoid } from 'nanoid';
import type { Redis } from 'ioredis';
import type { ConnectionLogger } from './connections.js';

/** What this instance last knew of the store when it found it rolled back. */
export interface Rollback {
  /** Why: the epoch key changed (or vanished), or the seq went below one this instance saw. */
  reason: 'epoch' | 'seq';
  /** The highest seq this instance had seen, and the store's seq when the rollback was found. */
  seenSeq: number;
  seq: number;
  /** On a sharded store: the shard whose keys were reset (its seq numbers its own outbox). */
  shard?: number;
}

/**
 * Whether the store is still the one this instance started on. The outbox seq only grows in a
 * store that keeps its data: it goes backwards after a Redis restart without persistence, a
 * FLUSHALL, or a failover to a replica that lagged. Two signs tell: the epoch key (a random
 * value written once, when absent) changed or vanished, or the seq is below one this instance
 * saw (a commit's, the live tail's, an earlier check's). A rollback found is logged as an
 * error, counted, and bumps `generation`, which the live tail follows (it restarts from the
 * store's seq and cuts its streams, so that their clients resume and learn of it).
 */
export class StoreIdentity {
  private epoch: string | undefined;
  private highest = 0;
  /** Rollbacks found since start. */
  rollbacks = 0;
  last: (Rollback & { at: number }) | undefined;
  /** Grows with each rollback found: who follows the store compares it with theirs. */
  generation = 0;
  private readonly epochKey: string;
  private readonly seqKey: string;

  constructor(prefix: string, private readonly logger?: ConnectionLogger, private readonly shard?: { index: number; of: number }) {
    this.epochKey = `${prefix}epoch`;
    this.seqKey = `${prefix}seq`;
  }

  /** Write the epoch when absent, and learn it with the seq (at open, and after a rollback). */
  async establish(client: Redis): Promise<number> {
    const replies = await client.multi().set(this.epochKey, nanoid(12), 'NX').get(this.epochKey).get(this.seqKey).exec();
    const failed = replies?.find(([error]) => error)?.[0];
    if (!replies || failed) throw failed ?? new Error('Redis store: the epoch transaction was discarded');
    this.epoch = replies[1]?.[1] as string;
    this.highest = Number(replies[2]?.[1] ?? 0);
    return this.highest;
  }

  /** What a seq read later is compared with: take it before sending the command. */
  mark(): Mark {
    return { seen: this.highest, generation: this.generation };
  }

  /** A seq this instance saw (the tail's, a commit's). */
  saw(seq: number): void {
    if (seq > this.highest) this.highest = seq;
  }

  /**
   * A commit's seq, with the mark taken before the commit was sent: the commit ran after every
   * seq seen then was assigned, so a seq not above it comes from a rolled-back store.
   */
  committed(seq: number, before: Mark, client: Redis): void {
    if (seq > before.seen) return this.saw(seq);
    if (before.generation !== this.generation) return; // found already
    this.found({ reason: 'seq', seenSeq: before.seen, seq }, client).catch(() => undefined);
  }

  /**
   * Read the epoch and seq and compare them with what this instance knew; resolves the store's
   * seq (after a rollback, once the epoch is written again).
   */
  async check(client: Redis): Promise<number> {
    const before = this.mark();
    const [epoch, raw] = await client.mget(this.epochKey, this.seqKey);
    const seq = Number(raw ?? 0);
    if (before.generation === this.generation) {
      if (this.epoch !== undefined && epoch !== this.epoch) return this.found({ reason: 'epoch', seenSeq: before.seen, seq }, client);
      if (seq < before.seen) return this.found({ reason: 'seq', seenSeq: before.seen, seq }, client);
    }
    this.saw(seq);
    return seq;
  }

  private async found(found: Rollback, client: Redis): Promise<number> {
    // Counted once: reads and commits sent before this point no longer compare.
    const rollback: Rollback = this.shard ? { ...found, shard: this.shard.index } : found;
    this.rollbacks += 1;
    this.generation += 1;
    this.highest = 0;
    this.epoch = undefined;
    this.last = { ...rollback, at: Date.now() };
    const message = this.shard ? shardMessage(rollback, this.shard) : rollback.reason === 'epoch'
      ? `Redis store: THE STORE WAS RESET (its epoch key changed or vanished: a Redis restart without persistence, a FLUSHALL, another server); outbox seqs start again from ${rollback.seq} (this instance had seen ${rollback.seenSeq}); what was written before is gone; event streams are cut, and clients resuming past the new seq get 409 resume_point_ahead`
      : `Redis store: THE OUTBOX SEQ WENT BACKWARDS from ${rollback.seenSeq} to ${rollback.seq} (a failover to a replica that lagged?); the records after ${rollback.seq} were lost and their seqs will be reused; event streams are cut, and clients resuming past the new seq get 409 resume_point_ahead`;
    if (this.logger?.error) this.logger.error({ ...rollback, rollbacks: this.rollbacks }, message);
    else this.logger?.warn({ ...rollback, rollbacks: this.rollbacks }, message);
    return this.establish(client);
  }
}

/** A shard's keys hold its sessions' state and the records it committed and had not yet moved to the outbox. */
function shardMessage(rollback: Rollback, shard: { index: number; of: number }): string {
  const what = rollback.reason === 'epoch'
    ? 'WAS RESET (its epoch key changed or vanished: a master restarted without persistence, a FLUSHALL)'
    : `WENT BACK (its seq from ${rollback.seenSeq} to ${rollback.seq}: a failover to a replica that lagged?)`;
  return `Redis store: SHARD ${shard.index} OF ${shard.of} ${what}; the claims, debounce buffers, correlation groups and turns of its sessions written before are gone, and so are the records it had committed and not yet moved to the outbox; what is admitted from now on comes out as usual`;
}

/** The highest seq seen, and the rollbacks found, when a command was sent. */
export interface Mark {
  seen: number;
  generation: number;
}
