import type { Outbox, OutboxLife, OutboxRecord, TailEvents } from '../../core/ports/index.js';
import { clock, recordOf } from './codec.js';
import type { ScriptedRedis } from './connections.js';
import type { StoreIdentity } from './identity.js';
import { entriesReply } from './replies.js';
import type { OutboxTail } from './tail.js';
import { trimOutbox } from './trim.js';

/**
 * The outbox as event streams read it (the `out` stream and its seq): replay after a seq, the
 * live tail of every instance's commits, the life of the seqs, the trim, and the holds that keep
 * what a cut stream had not read from any instance's trim.
 */
export class RedisOutbox implements Outbox {
  /** Holds of `keepUnread` asked for here (their names: `holder` and this count). */
  private holds = 0;

  constructor(
    private readonly client: ScriptedRedis,
    private readonly prefix: string,
    private readonly tailer: OutboxTail,
    private readonly identity: StoreIdentity,
    /** Trims and holds on the caller's clock (else the server's). */
    private readonly callerClock: boolean,
    /** Unique to this store: names its holds. */
    private readonly holder: string,
  ) {}

  async outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]> {
    if (limit <= 0) return [];
    // A stream replays from here and then goes live: a tail starting meanwhile must not start past it.
    await this.tailer.ready;
    return records(await this.client.aiRead(this.prefix, 'after', Math.floor(seq), limit));
  }

  async outboxGet(id: string): Promise<OutboxRecord | undefined> {
    return records(await this.client.aiRead(this.prefix, 'id', id))[0];
  }

  async lastSeq(): Promise<number> {
    // A live stream starts here: a tail starting meanwhile must not start past it.
    await this.tailer.ready;
    return Number((await this.client.get(`${this.prefix}seq`)) ?? 0);
  }

  /** The life of the seqs (a rollback found begins a new one: identity.ts). */
  life(): Promise<OutboxLife> {
    return this.identity.life(this.client);
  }

  /** Records from every instance, through one `XREAD BLOCK` connection while anyone listens. */
  tail(listener: (record: OutboxRecord) => void, events?: TailEvents): () => void {
    return this.tailer.subscribe(listener, events);
  }

  /** Trimmed only past every live hold of `keepUnread`, whichever instance asked for it. */
  trimOutbox(olderThan: number, keepCount: number, keepAfterSeq: number, now = Date.now()): Promise<number> {
    return trimOutbox(this.client, this.prefix, olderThan, keepCount, keepAfterSeq, this.callerClock ? clock(now) : '');
  }

  async keepUnread(afterSeq: number, forMs: number, now: number): Promise<void> {
    await this.client.aiKeepUnread(
      this.prefix,
      `${this.holder}${++this.holds}`,
      Math.floor(afterSeq),
      Math.ceil(forMs),
      this.callerClock ? clock(now) : '',
    );
  }
}

function records(reply: unknown): OutboxRecord[] {
  return entriesReply(reply).map(recordOf);
}
