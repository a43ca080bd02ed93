import { nanoid } from 'nanoid';
import type { OutboxLife } from '../../core/ports/index.js';
import type { ConnectionLogger, ScriptedRedis } from './connections.js';
import { renewLifeReply } from './replies.js';

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
 *
 * The outbox's seqs are reused after a rollback, so a rollback found also begins a new life of
 * them (`outlife`: a tag and the seq it begins after), which event stream ids carry: a consumer
 * that resumes from a seq of the earlier life is told so, whatever seq the store reached since.
 * The store's seq when the rollback was found is where the new life begins: records committed
 * after the loss and before it was found count as the earlier life's (the stream tells of the
 * reset at most a few records early, never after a record it skipped). The first instance to
 * find it begins the life; the others, finding the life changed from the one they knew, take it.
 * Not for a shard (the sharded store's event stream reads the global outbox).
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
  private readonly lifeKey: string;
  /** The outbox's life as this instance last learnt it at open or after a rollback ('' before). */
  private knownLife = '';
  /** A new life this instance must begin (it found a rollback): from the life it knew, after this seq. */
  private renewal: { known: string; since: number } | undefined;

  constructor(
    private readonly prefix: string,
    private readonly logger?: ConnectionLogger,
    private readonly shard?: { index: number; of: number },
  ) {
    this.epochKey = `${prefix}epoch`;
    this.seqKey = `${prefix}seq`;
    this.lifeKey = `${prefix}outlife`;
  }

  /**
   * Write the epoch when absent, and learn it with the seq (at open, and after a rollback); the
   * outbox's life too, begun when absent (a new store, or one whose keys were lost: its records
   * are all of this life).
   */
  async establish(client: ScriptedRedis): Promise<number> {
    const transaction = client.multi().set(this.epochKey, nanoid(12), 'NX').get(this.epochKey).get(this.seqKey);
    if (!this.shard) transaction.set(this.lifeKey, `${nanoid(8)} 0`, 'NX').get(this.lifeKey);
    const replies = await transaction.exec();
    const failed = replies?.find(([error]) => error)?.[0];
    if (!replies || failed) throw failed ?? new Error('Redis store: the epoch transaction was discarded');
    this.epoch = replies[1]?.[1] as string;
    this.highest = Number(replies[2]?.[1] ?? 0);
    if (!this.shard) this.knownLife = lifeOf(replies[4]?.[1] as string).tag;
    return this.highest;
  }

  /** The outbox's life now (begun when absent: the keys were lost and no instance has looked since). */
  async life(client: ScriptedRedis): Promise<OutboxLife> {
    const fresh = `${nanoid(8)} 0`;
    return lifeOf(((await client.set(this.lifeKey, fresh, 'NX', 'GET')) as string | null) ?? fresh);
  }

  /** Begin the new life a rollback found asks for (again at the next check when Redis failed it). */
  private async renew(client: ScriptedRedis): Promise<void> {
    const renewal = this.renewal;
    if (!renewal) return;
    const life = lifeOf(renewLifeReply(await client.aiRenewLife(this.prefix, renewal.known, nanoid(8), renewal.since)));
    if (this.renewal === renewal) this.renewal = undefined;
    this.knownLife = life.tag;
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
  committed(seq: number, before: Mark, client: ScriptedRedis): void {
    if (seq > before.seen) return this.saw(seq);
    if (before.generation !== this.generation) return; // found already
    // This commit's record is the new life's first seen: the life begins before it.
    this.found({ reason: 'seq', seenSeq: before.seen, seq }, client, seq - 1).catch(() => undefined);
  }

  /**
   * Read the epoch and seq and compare them with what this instance knew; resolves the store's
   * seq (after a rollback, once the epoch is written again).
   */
  async check(client: ScriptedRedis): Promise<number> {
    await this.renew(client);
    const before = this.mark();
    const [epoch, raw] = await client.mget(this.epochKey, this.seqKey);
    const seq = Number(raw ?? 0);
    if (before.generation === this.generation) {
      if (this.epoch !== undefined && epoch !== this.epoch)
        return this.found({ reason: 'epoch', seenSeq: before.seen, seq }, client, seq);
      if (seq < before.seen) return this.found({ reason: 'seq', seenSeq: before.seen, seq }, client, seq);
    }
    this.saw(seq);
    return seq;
  }

  /** `since`: the seq the outbox's new life begins after. */
  private async found(found: Rollback, client: ScriptedRedis, since: number): Promise<number> {
    // Counted once: reads and commits sent before this point no longer compare.
    const rollback: Rollback = this.shard ? { ...found, shard: this.shard.index } : found;
    this.rollbacks += 1;
    this.generation += 1;
    this.highest = 0;
    this.epoch = undefined;
    this.last = { ...rollback, at: Date.now() };
    const message = this.shard
      ? shardMessage(rollback, this.shard)
      : rollback.reason === 'epoch'
        ? `Redis store: THE STORE WAS RESET (its epoch key changed or vanished: a Redis restart without persistence, a FLUSHALL, another server); outbox seqs start again from ${rollback.seq} (this instance had seen ${rollback.seenSeq}); what was written before is gone; ${CLIENTS}`
        : `Redis store: THE OUTBOX SEQ WENT BACKWARDS from ${rollback.seenSeq} to ${rollback.seq} (a failover to a replica that lagged?); the records after ${rollback.seq} were lost and their seqs will be reused; ${CLIENTS}`;
    if (this.logger?.error) this.logger.error({ ...rollback, rollbacks: this.rollbacks }, message);
    else this.logger?.warn({ ...rollback, rollbacks: this.rollbacks }, message);
    if (!this.shard) this.renewal = { known: this.knownLife, since: Math.max(0, since) };
    const seq = await this.establish(client);
    await this.renew(client);
    return seq;
  }
}

/** What event stream clients see of a rollback (src/http/resume.ts). */
const CLIENTS =
  'event streams are cut; a client resuming with an id of before (<seq>@<life>) is told of the reset (event: gap, reset: true) and replayed the new seqs, one resuming with a plain seq past the new one gets 409 resume_point_ahead';

/** `<tag> <since>`, as `outlife` holds it. */
function lifeOf(value: string): OutboxLife {
  const [tag = '', since = '0'] = value.split(' ');
  return { tag, since: Number(since) };
}

/** A shard's keys hold its sessions' state and the records it committed and had not yet moved to the outbox. */
function shardMessage(rollback: Rollback, shard: { index: number; of: number }): string {
  const what =
    rollback.reason === 'epoch'
      ? 'WAS RESET (its epoch key changed or vanished: a master restarted without persistence, a FLUSHALL)'
      : `WENT BACK (its seq from ${rollback.seenSeq} to ${rollback.seq}: a failover to a replica that lagged?)`;
  return `Redis store: SHARD ${shard.index} OF ${shard.of} ${what}; the claims, debounce buffers, correlation groups and turns of its sessions written before are gone, and so are the records it had committed and not yet moved to the outbox; what is admitted from now on comes out as usual`;
}

/** The highest seq seen, and the rollbacks found, when a command was sent. */
export interface Mark {
  seen: number;
  generation: number;
}
