import Database from 'better-sqlite3';
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { UnavailableError } from '../../errors.js';
import type { CorrelationRecord, OutboxDraft, OutboxRecord } from '../../events.js';
import type { BufferHold } from '../local/buffers.js';
import { LocalState, MAX_CORRELATION_GROUPS } from '../local/local-state.js';
import { Checkpointer } from './checkpoint.js';
import { openOwned, type OwnedFile } from './open.js';
import { loadState, loadStateInChunks, migrate } from './load.js';
import { SqliteRows, schema, toRecord } from './rows.js';
import type {
  AdmitItem, AdmitVerdict, LeasedBatch, PushLease, PushOutcome, Store, StoreOptions,
} from '../../ports.js';

/** One write waiting for the next group commit. */
interface PendingWrite {
  run(): unknown;
  /** The write commits a batch: its record goes to the tail listeners once durable. */
  tails: boolean;
  /** A delivery waits for it (admit): committed ahead of background writes requested in the same turn. */
  urgent: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** How often, at most, writes compare the file at the path with the one open (ms of `now`). */
const IDENTITY_CHECK_MS = 1000;

/** Outbox records deleted per write of a trim (see `trimOutbox`). */
const TRIM_CHUNK = 128;

/**
 * The embedded durable store (better-sqlite3, WAL), for one instance.
 *
 * - One owner: the file is locked exclusively at open, so the in-memory indexes (LocalState)
 *   are the truth about its rows; a second store or process on the same file fails at open.
 * - Group commit: writes requested in one turn of the event loop share one transaction, and a
 *   write is acknowledged only after the commit. When any of them fails, the indexes are
 *   rebuilt from the rows (which are the truth) and each write runs again in a transaction of
 *   its own, so one failing write cannot fail the others.
 * - Claims are checked in memory and made durable in an append-only log replayed at start:
 *   a hashed key in a B-tree would cost a random page write per claim, the log a sequential one.
 * - `synchronous=NORMAL` in WAL mode survives a process crash (kill -9), not a power cut.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly durable = true;
  readonly shared = false;
  private readonly db: Database.Database;
  private readonly file: OwnedFile;
  /** Checkpoints the WAL off the event loop (none for `:memory:`). */
  readonly checkpointer: Checkpointer | undefined;
  private readonly rows: SqliteRows;
  private state: LocalState;
  private readonly maxCorrelationGroups: number;
  private readonly groupTx;
  private readonly statements;
  private queue: PendingWrite[] = [];
  /** Background writes held back one turn behind the admissions of their turn (see `flush`). */
  private held: PendingWrite[] = [];
  /** Leases ended by the commits of the write being tried (held again if it rolls back, see `rebuild`). */
  private readonly ended: BufferHold[] = [];
  private readonly listeners = new Set<(record: OutboxRecord) => void>();
  /** dev+ino of the file opened, to notice it deleted or replaced under us. */
  private readonly identity: { dev: number; ino: number } | undefined;
  private checkedAt = -Infinity;
  private broken: Error | undefined;
  private closed = false;
  /** The latest `now` seen, for stats and rebuilds that take no clock. */
  private now: number;

  /** Fences and push tokens of this run start here (see the constructor). */
  private readonly tokenBase: number;

  /**
   * Open a store file, loading its rows in chunks between turns of the event loop (the
   * service's start: it listens meanwhile). `new SqliteStore()` loads them at once.
   */
  static async open(path: string, options: StoreOptions & { now?: number } = {}): Promise<SqliteStore> {
    const store = new SqliteStore(path, options, true);
    try {
      store.state = await loadStateInChunks(store.db, store.rows, store.now, store.maxCorrelationGroups, store.tokenBase);
    } catch (error) {
      await store.checkpointer?.close();
      store.file.close();
      throw error;
    }
    return store;
  }

  constructor(readonly path: string, options: StoreOptions & { now?: number } = {}, loadLater = false) {
    this.now = options.now ?? Date.now();
    this.maxCorrelationGroups = options.maxCorrelationGroups ?? MAX_CORRELATION_GROUPS;
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.file = openOwned(path);
    const db = (this.db = this.file.db);
    try {
      db.exec(schema);
      migrate(db);
      this.identity = path === ':memory:' ? undefined : identityOf(path);
      // Fences and push tokens are epoch x 2^32 + a counter: they never repeat across restarts
      // (2^21 restarts of 2^32 tokens each stay below 2^53).
      const epoch = db.prepare(`INSERT INTO meta (name, value) VALUES ('epoch', 1)
        ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value`).pluck().get() as number;
      this.rows = new SqliteRows(db);
      this.tokenBase = epoch * 2 ** 32;
      this.state = loadLater
        ? new LocalState(this.rows, { maxCorrelationGroups: this.maxCorrelationGroups, tokenBase: this.tokenBase, dead: 0 })
        : loadState(db, this.rows, this.now, this.maxCorrelationGroups, this.tokenBase);
    } catch (error) {
      this.file.close();
      throw error;
    }
    this.checkpointer = path === ':memory:' ? undefined : this.checkpointOffThread();
    this.statements = {
      after: db.prepare('SELECT * FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?'),
      byId: db.prepare('SELECT * FROM outbox WHERE id = ?'),
      lastSeq: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'").pluck(),
      // What a trim may remove: a prefix in seq (= creation) order, up to the first record that
      // is neither past the count nor older than the cutoff (as the memory store does). Past the
      // count is arithmetic (seqs are dense: each commit takes the next one); the first young
      // record past it is found by one forward read from there.
      firstYoung: db.prepare('SELECT seq FROM outbox WHERE seq > ? AND created_at >= ? ORDER BY seq LIMIT 1').pluck(),
      // One chunk of that prefix, read forward from the last seq a chunk reached (records kept
      // for delivery are read once per trim, not once per chunk).
      trimChunk: db.prepare(`DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox
        WHERE seq > :from AND seq <= :upTo AND state NOT IN ('pending', 'dead') ORDER BY seq LIMIT :limit) RETURNING seq`).pluck(),
      oldest: db.prepare('SELECT seq, created_at AS createdAt FROM outbox ORDER BY seq LIMIT 1'),
    };
    this.groupTx = db.transaction((body: () => void) => body());
  }

  /** Commits never copy the WAL into the file themselves: a worker does, beside the event loop. */
  private checkpointOffThread(): Checkpointer {
    const db = this.db;
    db.pragma('wal_autocheckpoint = 0');
    return new Checkpointer(this.path, {
      fallBack: () => {
        if (this.closed) return;
        try {
          db.pragma('wal_autocheckpoint = 1000');
        } catch {
          // A store that cannot set a pragma fails its next write, and says so there.
        }
      },
      finish: () => {
        if (this.closed || this.broken) return;
        try {
          db.pragma('wal_checkpoint(PASSIVE)');
        } catch {
          // The next long WAL asks again; commits are not affected.
        }
      },
    });
  }

  async admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
    this.use(now);
    return this.write(() => this.state.admit(items, now), false, true);
  }

  async correlation(key: string, now: number): Promise<CorrelationRecord | undefined> {
    this.use();
    return this.state.correlation(key, now);
  }

  async claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]> {
    this.use(now);
    // Leases live in memory only: this file has one owner, and a restart ends every lease.
    return this.state.claimDue(now, leaseMs, limit);
  }

  async renewLease(batch: LeasedBatch, now: number, leaseMs: number): Promise<boolean> {
    this.use(now);
    return this.state.renewLease(batch, now, leaseMs);
  }

  async commit(batch: LeasedBatch, draft: OutboxDraft, now: number): Promise<OutboxRecord | undefined> {
    this.use(now);
    return this.write(() => {
      const lease = this.state.buffers.leased(batch.debounceKey, batch.fence)?.lease;
      const record = this.state.commit(batch, draft, now);
      // Should the group roll back, the lease this commit ended is held again (see `rebuild`).
      if (record && lease) this.ended.push({ debounceKey: batch.debounceKey, lease });
      return record;
    }, true);
  }

  async release(batch: LeasedBatch, retryAt: number): Promise<void> {
    this.use();
    return this.write(() => this.state.release(batch, retryAt));
  }

  async nextDeadline(): Promise<number | undefined> {
    return this.state.buffers.nextDue();
  }

  async openBuffers(): Promise<number> {
    return this.state.buffers.size;
  }

  async outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]> {
    this.use();
    return (this.statements.after.all(seq, limit) as Parameters<typeof toRecord>[0][]).map(toRecord);
  }

  async outboxGet(id: string): Promise<OutboxRecord | undefined> {
    this.use();
    const row = this.statements.byId.get(id) as Parameters<typeof toRecord>[0] | undefined;
    return row && toRecord(row);
  }

  async lastSeq(): Promise<number> {
    this.use();
    return (this.statements.lastSeq.get() as number | undefined) ?? 0;
  }

  tail(listener: (record: OutboxRecord) => void): () => void {
    const wrapped = (record: OutboxRecord): void => listener(record);
    this.listeners.add(wrapped);
    return () => this.listeners.delete(wrapped);
  }

  async trimOutbox(olderThan: number, keepCount: number, keepAfterSeq: number): Promise<number> {
    this.use();
    // Nothing can go when the oldest record is younger than the cutoff and no more than
    // keepCount seqs lie between it and the newest: the usual case of the minute's trim on an
    // idle or quiet server, said by two lookups by key.
    const oldest = this.statements.oldest.get() as { seq: number; createdAt: number } | undefined;
    if (!oldest) return 0;
    const countBound = ((this.statements.lastSeq.get() as number | undefined) ?? oldest.seq) - keepCount;
    if (oldest.createdAt >= olderThan && oldest.seq > countBound) return 0;
    const young = this.statements.firstYoung.get(Math.max(countBound, oldest.seq - 1), olderThan) as number | undefined;
    const upTo = Math.min(keepAfterSeq, young === undefined ? Number.MAX_SAFE_INTEGER : young - 1);
    // A chunk per write, each in a turn of its own: a delete is paid per row (its body's pages,
    // the id index), and a thousand rows at once held the event loop 4-7 ms, four times a
    // second at 4,000 messages a second (scratch CPU profile): the acknowledgements queued
    // behind it made the SQLite store's ack p99.
    let removed = 0;
    for (let from = oldest.seq - 1; ;) {
      const seqs = await this.write(() => this.statements.trimChunk.all({ from, upTo, limit: TRIM_CHUNK }) as number[]);
      removed += seqs.length;
      // A store closed meanwhile (shutdown) has no more to trim.
      if (seqs.length < TRIM_CHUNK || this.closed) return removed;
      from = Math.max(...seqs);
    }
  }

  async claimPush(now: number, leaseMs: number, limit: number): Promise<PushLease[]> {
    this.use(now);
    return this.state.claimPush(now, leaseMs, limit);
  }

  async ackPush(lease: PushLease, outcome: PushOutcome, now: number): Promise<boolean> {
    this.use(now);
    return this.write(() => this.state.ackPush(lease, outcome, now));
  }

  async nextPushAt(): Promise<number | undefined> {
    return this.state.pushes.nextDue();
  }

  async deliveryCounts(): Promise<{ pending: number; dead: number }> {
    return this.state.deliveryCounts();
  }

  async deadLetters(limit: number): Promise<OutboxRecord[]> {
    this.use();
    return this.rows.deadRecords(undefined, limit);
  }

  async requeueDead(id: string | undefined, limit: number, now: number): Promise<number> {
    this.use(now);
    // Each call reads which records are dead inside its own write: two calls never move one twice.
    return this.write(() => this.state.requeueDead(id, limit, now));
  }

  claimStats(): { keys: number; evicted: number } {
    return this.state.claims.stats();
  }

  correlationStats(): { groups: number; evicted: number } {
    return this.state.correlationStats(this.now);
  }

  async ping(): Promise<void> {
    this.use();
    this.checkFile(undefined);
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    while (this.held.length > 0 || this.queue.length > 0) {
      this.flushHeld();
      this.flush();
    }
    this.closed = true;
    try {
      if (!this.broken) this.groupTx(() => this.rows.purge(this.now));
    } finally {
      // The worker's connection first: the last one to close checkpoints and removes the WAL.
      await this.checkpointer?.close();
      this.file.close();
    }
  }

  private use(now?: number): void {
    if (this.closed) throw new UnavailableError('store_closed', `SQLite store "${this.path}" is closed`, 5, { stage: 'store' });
    if (now === undefined) return;
    if (now > this.now && now !== Infinity) this.now = now;
    this.checkFile(now);
  }

  /**
   * Refuse to write into a file no longer at its path (deleted or replaced by a restore): the
   * writes would succeed into an orphan and vanish at restart. Checked at most once per
   * IDENTITY_CHECK_MS of the callers' clock; ping() always checks.
   */
  private checkFile(now: number | undefined): void {
    if (this.broken) throw this.broken;
    if (!this.identity) return;
    if (now !== undefined && Number.isFinite(now) && now >= this.checkedAt && now - this.checkedAt < IDENTITY_CHECK_MS) return;
    if (now !== undefined && Number.isFinite(now)) this.checkedAt = now;
    const current = identityOf(this.path);
    if (current?.dev === this.identity.dev && current.ino === this.identity.ino) return;
    this.broken = new UnavailableError(
      'store_unavailable', `SQLite store file "${this.path}" was deleted or replaced while the service ran; restart the service`, 5, { stage: 'store' },
    );
    throw this.broken;
  }

  private write<T>(run: () => T, tails = false, urgent = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(() => this.flush());
      this.queue.push({ run, tails, urgent, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  private flush(): void {
    const writes = this.queue;
    this.queue = [];
    if (writes.length === 0) return;
    // Deliveries waiting for their answer go first, in a transaction of their own; flush
    // commits and push acks of the same turn follow in the next turn, after the answers are
    // out, and ahead of anything asked for later (they are held once, never again).
    const urgent = writes.filter((write) => write.urgent);
    if (urgent.length === 0 || urgent.length === writes.length) return this.commitGroup(writes);
    if (this.held.length === 0) setImmediate(() => this.flushHeld());
    for (const write of writes) if (!write.urgent) this.held.push(write);
    this.commitGroup(urgent);
  }

  private flushHeld(): void {
    const writes = this.held;
    this.held = [];
    if (writes.length > 0) this.commitGroup(writes);
  }

  /** One transaction for `writes`; each is answered once it is durable (or refused). */
  private commitGroup(writes: PendingWrite[]): void {
    let outcomes: Outcome[] = [];
    this.ended.length = 0;
    try {
      // The common case: the whole group in one transaction, no statement more per write.
      this.groupTx(() => {
        for (const write of writes) outcomes.push({ ok: true, value: write.run() });
      });
    } catch {
      // Something in the group failed and none of it is on disk: make the indexes the rows'
      // view again, then give every write a transaction of its own, so one bad write (a
      // refused row, a full disk) cannot fail the others.
      this.rows.rolledBack();
      this.rebuild(this.ended);
      outcomes = writes.map((write) => {
        this.ended.length = 0;
        try {
          let value: unknown;
          this.groupTx(() => { value = write.run(); });
          return { ok: true, value };
        } catch (error) {
          this.rows.rolledBack();
          // A refused row (a duplicate outbox id) is refused before the indexes change; a
          // failure at COMMIT comes after them, and a lease the write ended is held again.
          if (!isConstraint(error)) this.rebuild(this.ended);
          return { ok: false, error };
        }
      });
    }
    writes.forEach((write, i) => {
      const outcome = outcomes[i] as Outcome;
      if (!outcome.ok) return write.reject(outcome.error);
      if (write.tails && outcome.value) this.announce(outcome.value as OutboxRecord);
      write.resolve(outcome.value);
    });
    this.checkpointer?.written(writes.length);
    if (this.rows.purgeDue) {
      try {
        this.groupTx(() => this.rows.purge(this.now));
      } catch {
        // The next purge tries again; the log is only larger meanwhile.
      }
    }
  }

  /**
   * Make the indexes the rows' view again after a failed write. Leases still held are carried
   * over, so flushes and pushes under way elsewhere still commit and ack; so are the retry times
   * of failed flushes, whose sessions stay held (no later batch of theirs goes first), and the
   * leases that commits of the rolled-back group had ended (`ended`): each such commit, tried
   * again on its own, still holds its batch.
   */
  private rebuild(ended: readonly BufferHold[] = []): void {
    const buffers = [...this.state.buffers.holds(), ...ended];
    const pushes = this.state.pushes.leases();
    // The rebuilt buffers' parts carry no body: a flush reads each from its row, so nothing of
    // a write that was rolled back survives in memory.
    this.state = loadState(this.db, this.rows, this.now, this.maxCorrelationGroups, this.state.lastToken);
    for (const hold of buffers) this.state.buffers.adopt(hold);
    for (const { sessionKey, lease } of pushes) this.state.pushes.adopt(sessionKey, lease);
  }

  private announce(record: OutboxRecord): void {
    for (const listener of this.listeners) {
      try {
        listener({ ...record });
      } catch {
        // A listener's failure is its own; the record is committed either way.
      }
    }
  }
}

function identityOf(path: string): { dev: number; ino: number } | undefined {
  try {
    const { dev, ino } = statSync(path);
    return { dev, ino };
  } catch {
    return undefined;
  }
}

function isConstraint(error: unknown): boolean {
  return error instanceof Database.SqliteError && error.code.startsWith('SQLITE_CONSTRAINT');
}
