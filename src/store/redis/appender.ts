import type { ScriptedRedis } from './connections.js';
import { appendDrainedReply, shardPendingReply } from './replies.js';

/** Records a drain moves per call. */
const BATCH = 128;

/** A shard's cursor in the global keys (append-drained.lua): its life, the seq of its last record appended, that record's id. */
interface Cursor {
  life: string;
  seq: number;
  id: string;
}

/**
 * The second step of a sharded commit: a shard's records, committed to its own outbox, go to
 * the global one (append-drained.lua), in the shard's order, each once. Any instance may drain
 * any shard at any time (after each of its commits, and every second for what a dead instance
 * committed and did not move): the global cursor per shard makes a second drainer, or a call
 * repeated after a lost answer, append nothing twice, and a session's records keep their order
 * because a shard's are appended in its seq order. Drains of one shard on this instance run one
 * at a time; one asked for while another runs runs after it (the record it waits for may have
 * been committed after the running one read the shard), shared by everyone who asked meanwhile,
 * and answering with what both moved.
 *
 * The cursor kept here is the global one as the last call answered, never more: after a reset
 * of the global keys or of a shard's (a master restarted without persistence) it goes back or
 * names a new life of the shard, and a cursor kept ahead would drop the shard's new records
 * before they were appended (shard-pending.lua drops what is at or below the cursor).
 */
export class ShardAppender {
  /** Per shard: its cursor, as the global keys last answered here. */
  private readonly cursors: Cursor[];
  private readonly running: Array<Promise<Map<string, number>> | undefined>;
  private readonly next: Array<Promise<Map<string, number>> | undefined>;

  constructor(
    /** A connection with the `whole` scripts (append-drained appends for real). */
    private readonly client: ScriptedRedis,
    private readonly globalPrefix: string,
    private readonly shardPrefixes: readonly string[],
  ) {
    this.cursors = shardPrefixes.map(() => ({ life: '', seq: 0, id: '' }));
    this.running = shardPrefixes.map(() => undefined);
    this.next = shardPrefixes.map(() => undefined);
  }

  /** Move shard `shard`'s waiting records to the global outbox; resolves the global seq of each record it saw, by id. */
  drain(shard: number): Promise<Map<string, number>> {
    const queued = this.next[shard];
    if (queued) return queued;
    const running = this.running[shard];
    if (!running) return this.start(shard);
    // Its waiters' records may be among those the running drain moves: they see both answers.
    const after = running
      .catch(() => new Map<string, number>())
      .then(async (earlier) => {
        this.next[shard] = undefined;
        const later = await this.start(shard);
        for (const [id, seq] of later) earlier.set(id, seq);
        return earlier;
      });
    this.next[shard] = after;
    return after;
  }

  /** Drain every shard (the periodic sweep); resolves how many records it appended. */
  async drainAll(): Promise<number> {
    const drained = await Promise.all(this.shardPrefixes.map((_prefix, shard) => this.drain(shard)));
    return drained.reduce((sum, seqs) => sum + seqs.size, 0);
  }

  private start(shard: number): Promise<Map<string, number>> {
    const run = this.run(shard).finally(() => {
      if (this.running[shard] === run) this.running[shard] = undefined;
    });
    this.running[shard] = run;
    return run;
  }

  private async run(shard: number): Promise<Map<string, number>> {
    const seqs = new Map<string, number>();
    for (;;) {
      const from = this.cursors[shard] as Cursor;
      const [life, entries] = shardPendingReply(
        await this.client.aiShardPending(this.shardPrefixes[shard] as string, from.life, from.seq, from.id, BATCH),
      );
      if (entries.length === 0) return seqs;
      const args: Array<string | number> = [shard, life];
      for (const [streamId, f] of entries) {
        // fields: i id, t createdAt, k sessionKey, d draft, s state, n commit time
        args.push(
          Number.parseInt(streamId, 10),
          f[1] as string,
          f[3] as string,
          f[5] as string,
          f[7] as string,
          f[9] as string,
          f[11] as string,
        );
      }
      const [known, seq, id, appended] = appendDrainedReply(
        await this.client.aiAppendDrained(this.globalPrefix, ...args),
      );
      for (const [recordId, globalSeq] of appended) seqs.set(recordId, globalSeq);
      const to: Cursor = { life: known, seq, id };
      this.cursors[shard] = to;
      // A full batch: more may wait. No progress (the cursor did not move): stop.
      if (entries.length < BATCH || (to.life === from.life && to.seq === from.seq)) return seqs;
    }
  }
}
