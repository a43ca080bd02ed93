import { nanoid } from 'nanoid';
import { outboxRecord, type OutboxDraft, type OutboxRecord } from '../../core/ports/index.js';
import type { BufferedPart } from '../../events/inbound.js';
import { ByteArena, own, textOf } from './byte-arena.js';
import { LocalState, MAX_CORRELATION_GROUPS } from './local-state.js';
import type { Rows } from './rows.js';
import { MemoryBudgets } from './budgets.js';
import { committedRecord, LocalStore, type WriteKind } from './local-store.js';
import type { LeasedBatch, OutboxLife, StoreOptions } from '../../core/ports/index.js';

/**
 * A retained outbox record. Its body is kept as UTF-8 bytes in a `ByteArena`, outside the JS
 * heap, and `body` is empty: a record lives on for `events.retentionCount` more messages, so
 * each young collection copied every new record's body (a two-byte string of about 1 KB),
 * about a third of what survived it per message (`bench/gc.mjs`). `handOut` gives the record
 * back whole.
 *
 * Every field is in the literal that makes it (`undefined` when absent), and fields are
 * cleared, never deleted: a field added later goes to an out-of-object property array, and a
 * deleted one turns the object into a dictionary several times its size, for as long as the
 * record is retained.
 */
interface Kept extends OutboxRecord {
  /** The body's bytes: `chunk[start, end)`. */
  chunk: Buffer;
  start: number;
  end: number;
}

function kept(record: OutboxRecord, arena: ByteArena): Kept {
  const { chunk, start, end } = arena.put(record.body);
  return {
    id: record.id,
    type: record.type,
    sessionKey: record.sessionKey,
    channel: record.channel,
    createdAt: record.createdAt,
    body: '',
    state: record.state,
    messageIds: record.messageIds,
    seq: record.seq,
    attempts: record.attempts,
    lastError: record.lastError,
    updatedAt: record.updatedAt,
    nextAttemptAt: record.nextAttemptAt,
    chunk,
    start,
    end,
  };
}

/** A kept record as every reader outside the store gets it: a copy, with its body as text and no absent field. */
function handOut(record: OutboxRecord): OutboxRecord {
  const copy = outboxRecord(record, record.seq, record.attempts, record.updatedAt, record.nextAttemptAt);
  copy.body = textOf(record as Kept);
  if (record.lastError !== undefined) copy.lastError = record.lastError;
  return copy;
}

/** The rows of the memory store: the outbox, part numbers (bodies stay with their buffers) and conversations, in this process only. */
class MemoryRows extends MemoryBudgets implements Rows {
  /** Outbox in seq order (a record by seq is a binary search); `byId` indexes the same records. */
  outbox: Kept[] = [];
  readonly byId = new Map<string, Kept>();
  private readonly arena = new ByteArena();
  seq = 0;
  private partCount = 0;

  claimTaken(): void {}
  groupSaved(): void {}
  groupsDropped(): void {}
  bufferSaved(): void {}
  bufferDropped(): void {}
  recordSaved(): void {}

  /** A part's body lives with its buffer (see `PartMeta.body`): the rows only number it. */
  partAdded(): string {
    return String(++this.partCount);
  }

  partBodies(ids: readonly string[]): BufferedPart[] {
    // Every part of this store was admitted by its own state, which keeps the body.
    throw new Error(`memory store: no body kept for part(s) ${ids.join(', ')}`);
  }

  partsDeleted(): void {}
  partsHeld(): void {}
  turnSaved(): void {}
  turnDropped(): void {}

  outputSession(id: string): string | undefined {
    return this.byId.get(id)?.sessionKey;
  }

  outboxAppended(draft: OutboxDraft, now: number): OutboxRecord {
    if (this.byId.has(draft.id)) throw new Error(`memory store: the outbox already has a record "${draft.id}"`);
    const record = outboxRecord(draft, ++this.seq, 0, now, draft.state === 'pending' ? now : undefined);
    const stored = kept(record, this.arena);
    this.outbox.push(stored);
    this.byId.set(stored.id, stored);
    return record;
  }

  record(seq: number): OutboxRecord | undefined {
    const record = this.outbox[this.indexAfter(seq - 1)];
    return record?.seq === seq ? record : undefined;
  }

  /** The index of the first record with a seq above `seq` (the length when none is). */
  indexAfter(seq: number): number {
    let low = 0;
    let high = this.outbox.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.outbox[mid] as Kept).seq <= seq) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  handOut(record: OutboxRecord): OutboxRecord {
    return handOut(record);
  }

  deadRecords(id: string | undefined, limit: number): OutboxRecord[] {
    if (id !== undefined) {
      const record = this.byId.get(id);
      return record?.state === 'dead' ? [record] : [];
    }
    // Dead letters are rare and read by an operator: a scan of the retained outbox is fine.
    const found: OutboxRecord[] = [];
    for (const record of this.outbox) {
      if (found.length >= limit) break;
      if (record.state === 'dead') found.push(record);
    }
    return found;
  }
}

/**
 * Volatile store: everything lives in this process and is gone on restart. Fast, and the
 * right choice for tests and throwaway setups; the service warns when it starts on it.
 */
export class MemoryStore extends LocalStore {
  readonly kind = 'memory';
  readonly durable = false;
  private readonly rows = new MemoryRows();
  /** Seqs start again from 1 in each new store (each process): each is a life of its own. */
  private readonly lifeTag = nanoid(8);

  constructor(options: StoreOptions = {}) {
    super();
    this.state = new LocalState(this.rows, {
      maxCorrelationGroups: options.maxCorrelationGroups ?? MAX_CORRELATION_GROUPS,
      tokenBase: 0,
      dead: 0,
    });
  }

  /** Every change is done when it returns; a commit's record goes to the tail at once. */
  protected async write<T>(run: () => T, kind?: WriteKind): Promise<T> {
    const value = run();
    const record = kind === 'commit' ? committedRecord(value) : undefined;
    if (record) this.announce(record);
    return value;
  }

  protected override use(now?: number): void {
    if (this.closed) throw new Error('memory store is closed');
    super.use(now);
  }

  override async claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]> {
    const batches = await super.claimDue(now, leaseMs, limit);
    // The batch objects are fresh; the parts are the stored ones: hand out copies.
    for (const batch of batches) batch.parts = batch.parts.map((part) => ({ ...part }));
    return batches;
  }

  async outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]> {
    this.use();
    const start = this.rows.indexAfter(seq);
    return this.rows.outbox.slice(start, start + limit).map(handOut);
  }

  async outboxGet(id: string): Promise<OutboxRecord | undefined> {
    this.use();
    const record = this.rows.byId.get(id);
    return record && handOut(record);
  }

  async lastSeq(): Promise<number> {
    return this.rows.seq;
  }

  async life(): Promise<OutboxLife> {
    return { tag: this.lifeTag, since: 0 };
  }

  async trimOutbox(olderThan: number, keepCount: number, keepAfterSeq: number): Promise<number> {
    this.use();
    const rows = this.rows;
    // Records are in seq (= creation) order: drop from the front while past the newest
    // keepCount seqs or too old, stepping over what still waits for delivery (kept besides the
    // count, as every store does); compact the array only then.
    const countBound = rows.seq - keepCount;
    let kept: Kept[] | undefined;
    let removed = 0;
    let i = 0;
    for (; i < rows.outbox.length; i++) {
      const record = rows.outbox[i] as Kept;
      if ((record.seq > countBound && record.createdAt >= olderThan) || record.seq > keepAfterSeq) break;
      if (record.state === 'pending' || record.state === 'dead') {
        // Kept past its neighbours: its bytes move out of the shared chunk, which may then go.
        const owned = own(record);
        record.chunk = owned.chunk;
        record.start = owned.start;
        record.end = owned.end;
        (kept ??= []).push(record);
      } else {
        rows.byId.delete(record.id);
        removed++;
      }
    }
    if (i > 0) rows.outbox = kept ? [...kept, ...rows.outbox.slice(i)] : rows.outbox.slice(i);
    return removed;
  }

  async deadLetters(limit: number): Promise<OutboxRecord[]> {
    this.use();
    return this.rows.deadRecords(undefined, limit).map(handOut);
  }

  async ping(): Promise<void> {
    this.use();
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
