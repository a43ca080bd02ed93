import Database from 'better-sqlite3';
import { nanoid } from 'nanoid';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { UnavailableError } from '../../core/errors.js';
import type {
  ContextKeep,
  OutboxDraft,
  OutboxRecord,
  Revised,
  RevisionKeep,
  TurnCommit,
  TurnRule,
} from '../../core/ports/index.js';
import type { ContextMessage, Revision } from '../../events/context.js';
import type { BufferHold } from '../local/buffers.js';
import { LocalState, MAX_CORRELATION_GROUPS } from '../local/local-state.js';
import { checkpointOffThread, type Checkpointer, MAX_WAL_FRAMES } from './checkpoint.js';
import { GroupCommit } from './group-commit.js';
import { FileIdentity } from './identity.js';
import { openOwned, type OwnedFile } from './open.js';
import { loadState, loadStateInChunks, migrate } from './load.js';
import { SqliteRows, schema, toRecord } from './rows.js';
import { committedRecord, LocalStore, type WriteKind } from '../local/local-store.js';
import type { LeasedBatch, OutboxLife, StoreOptions } from '../../core/ports/index.js';

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
export class SqliteStore extends LocalStore {
  readonly kind = 'sqlite';
  readonly durable = true;
  private readonly db: Database.Database;
  private readonly file: OwnedFile;
  /** Checkpoints the WAL off the event loop (none for `:memory:`). */
  readonly checkpointer: Checkpointer | undefined;
  private readonly rows: SqliteRows;
  private readonly maxCorrelationGroups: number;
  private readonly groupTx;
  private readonly statements;
  private readonly writes: GroupCommit;
  /** Leases ended by the commits of the write being tried (held again if it rolls back, see `rebuild`). */
  private readonly ended: BufferHold[] = [];
  /** Leases broken by the revisions of the write being tried, as they were (held again if it rolls back). */
  private readonly broken: BufferHold[] = [];
  /** dev+ino of the file opened, to notice it deleted or replaced under us. */
  private readonly identity: FileIdentity;

  /** Fences and push tokens of this run start here (see the constructor). */
  private readonly tokenBase: number;
  /** The life of the file's seqs: written with the file, so a new file (the old one deleted) is a new life. */
  private readonly lifeTag: string;

  /**
   * Open a store file, loading its rows in chunks between turns of the event loop (the
   * service's start: it listens meanwhile). `new SqliteStore()` loads them at once.
   */
  static async open(path: string, options: StoreOptions & { now?: number } = {}): Promise<SqliteStore> {
    const store = new SqliteStore(path, options, true);
    try {
      store.state = await loadStateInChunks(
        store.db,
        store.rows,
        store.now,
        store.maxCorrelationGroups,
        store.tokenBase,
      );
    } catch (error) {
      await store.checkpointer?.close();
      store.file.close();
      throw error;
    }
    return store;
  }

  /**
   * `maxWalFrames`: the WAL's bound in frames (tests make it small). @default MAX_WAL_FRAMES
   */
  constructor(
    readonly path: string,
    options: StoreOptions & { now?: number; maxWalFrames?: number } = {},
    loadLater = false,
  ) {
    super();
    this.now = options.now ?? Date.now();
    this.maxCorrelationGroups = options.maxCorrelationGroups ?? MAX_CORRELATION_GROUPS;
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.file = openOwned(path);
    const db = (this.db = this.file.db);
    try {
      db.exec(schema);
      migrate(db);
      this.identity = new FileIdentity(path);
      // Fences and push tokens are epoch x 2^32 + a counter: they never repeat across restarts
      // (2^21 restarts of 2^32 tokens each stay below 2^53).
      const epoch = db
        .prepare(
          `INSERT INTO meta (name, value) VALUES ('epoch', 1)
        ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value`,
        )
        .pluck()
        .get() as number;
      // (String: the column's INTEGER affinity turns an all-digit tag into a number, read back the same every time.)
      this.lifeTag = String(
        db
          .prepare(
            `INSERT INTO meta (name, value) VALUES ('outlife', ?)
        ON CONFLICT (name) DO UPDATE SET value = value RETURNING value`,
          )
          .pluck()
          .get(nanoid(8)),
      );
      this.rows = new SqliteRows(db);
      this.tokenBase = epoch * 2 ** 32;
      this.state = loadLater
        ? new LocalState(this.rows, {
            maxCorrelationGroups: this.maxCorrelationGroups,
            tokenBase: this.tokenBase,
            dead: 0,
          })
        : loadState(db, this.rows, this.now, this.maxCorrelationGroups, this.tokenBase);
    } catch (error) {
      this.file.close();
      throw error;
    }
    this.checkpointer =
      path === ':memory:'
        ? undefined
        : checkpointOffThread(db, path, options.maxWalFrames ?? MAX_WAL_FRAMES, {
            closed: () => this.closed,
            replaced: () => this.identity.broken !== undefined,
          });
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
      trimChunk: db
        .prepare(
          `DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox
        WHERE seq > :from AND seq <= :upTo AND state NOT IN ('pending', 'dead') ORDER BY seq LIMIT :limit) RETURNING seq`,
        )
        .pluck(),
      oldest: db.prepare('SELECT seq, created_at AS createdAt FROM outbox ORDER BY seq LIMIT 1'),
      valueGet: db.prepare('SELECT value FROM shared_values WHERE name = ? AND until > ?').pluck(),
      valuePut: db.prepare(
        'INSERT INTO shared_values (name, value, until) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value, until = excluded.until',
      ),
      valuesExpired: db.prepare('DELETE FROM shared_values WHERE until <= ?'),
    };
    this.groupTx = db.transaction((body: () => void) => body());
    this.writes = new GroupCommit({
      transaction: (body) => this.groupTx(body),
      trying: () => {
        this.ended.length = 0;
        this.broken.length = 0;
      },
      rolledBack: (error) => {
        this.rows.rolledBack();
        // A refused row (a duplicate outbox id) is refused before the indexes change; any other
        // failure (at COMMIT) comes after them, and a lease the write ended is held again.
        if (error === undefined || !isConstraint(error)) this.rebuild(this.ended, this.broken);
      },
      announce: (value) => {
        const record = committedRecord(value);
        if (record) this.announce(record);
      },
      done: (writes) => {
        this.checkpointer?.written(writes);
        if (!this.rows.purgeDue) return;
        try {
          this.groupTx(() => this.rows.purge(this.now));
        } catch {
          // The next purge tries again; the log is only larger meanwhile, and its counts are read again.
          this.rows.rolledBack();
        }
      },
    });
  }

  /** Changes go through the group commit: answered once durable, a commit's record announced then. */
  protected write<T>(run: () => T, kind?: WriteKind): Promise<T> {
    return this.writes.write(run, kind === 'commit', kind === 'admit');
  }

  protected override committing(batch: LeasedBatch, draft: OutboxDraft, now: number): OutboxRecord | undefined {
    const lease = this.state.buffers.leased(batch.debounceKey, batch.fence)?.lease;
    const record = super.committing(batch, draft, now);
    // Should the group roll back, the lease this commit ended is held again (see `rebuild`).
    if (record && lease) this.ended.push({ debounceKey: batch.debounceKey, lease });
    return record;
  }

  protected override committingTurn(
    batch: LeasedBatch,
    draft: OutboxDraft,
    now: number,
    rule: TurnRule,
  ): TurnCommit | undefined {
    const lease = this.state.buffers.leased(batch.debounceKey, batch.fence)?.lease;
    const done = super.committingTurn(batch, draft, now, rule);
    if (done && lease) this.ended.push({ debounceKey: batch.debounceKey, lease });
    return done;
  }

  protected override keepingContext(
    batch: LeasedBatch,
    messages: readonly ContextMessage[],
    now: number,
    keep: ContextKeep,
  ): boolean {
    const lease = this.state.buffers.leased(batch.debounceKey, batch.fence)?.lease;
    const kept = super.keepingContext(batch, messages, now, keep);
    if (kept && lease) this.ended.push({ debounceKey: batch.debounceKey, lease });
    return kept;
  }

  protected override deferring(batch: LeasedBatch, deferKey: string, dueAt: number, now: number): boolean {
    const lease = this.state.buffers.leased(batch.debounceKey, batch.fence)?.lease;
    const deferred = super.deferring(batch, deferKey, dueAt, now);
    if (deferred && lease) this.ended.push({ debounceKey: batch.debounceKey, lease });
    return deferred;
  }

  protected override revising(
    sessionKey: string,
    debounceKeys: readonly string[],
    revision: Revision,
    now: number,
    keep: RevisionKeep,
  ): Revised {
    const leases = debounceKeys.map((debounceKey) => this.state.buffers.get(debounceKey)?.lease);
    const revised = super.revising(sessionKey, debounceKeys, revision, now, keep);
    // A broken lease is a new one (`Buffers.breakLease`): should the group roll back, the
    // revision did not happen, and the flush holding the lease before it may still commit.
    debounceKeys.forEach((debounceKey, i) => {
      const lease = leases[i];
      if (lease && this.state.buffers.get(debounceKey)?.lease !== lease) this.broken.push({ debounceKey, lease });
    });
    return revised;
  }

  /** Shared values live in the file: a poller's cursor and a platform token survive a restart. */
  override async sharedGet(name: string, now: number): Promise<string | undefined> {
    this.use(now);
    return (this.statements.valueGet.get(name, now) as string | undefined) ?? undefined;
  }

  override async sharedPut(name: string, value: string, ttlMs: number, now: number): Promise<void> {
    this.use(now);
    await this.write(() => {
      this.statements.valuesExpired.run(now);
      this.statements.valuePut.run(name, value, Math.floor(now + ttlMs));
    });
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

  async life(): Promise<OutboxLife> {
    return { tag: this.lifeTag, since: 0 };
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
      const seqs = await this.writes.write(
        () => this.statements.trimChunk.all({ from, upTo, limit: TRIM_CHUNK }) as number[],
      );
      removed += seqs.length;
      // A store closed meanwhile (shutdown) has no more to trim.
      if (seqs.length < TRIM_CHUNK || this.closed) return removed;
      from = Math.max(...seqs);
    }
  }

  async deadLetters(limit: number): Promise<OutboxRecord[]> {
    this.use();
    return this.rows.deadRecords(undefined, limit);
  }

  async ping(): Promise<void> {
    this.use();
    this.identity.check(undefined);
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.writes.drain();
    this.closed = true;
    try {
      if (!this.identity.broken) this.groupTx(() => this.rows.purge(this.now));
    } finally {
      // The worker's connection first: the last one to close checkpoints and removes the WAL.
      await this.checkpointer?.close();
      this.file.close();
    }
  }

  protected override use(now?: number): void {
    if (this.closed)
      throw new UnavailableError('store_closed', `SQLite store "${this.path}" is closed`, 5, { stage: 'store' });
    if (now === undefined) return;
    super.use(now);
    this.identity.check(now);
  }

  /**
   * Make the indexes the rows' view again after a failed write. Leases still held are carried
   * over, so flushes and pushes under way elsewhere still commit and ack; so are the retry times
   * of failed flushes, whose sessions stay held (no later batch of theirs goes first), and the
   * leases that commits of the rolled-back group had ended (`ended`): each such commit, tried
   * again on its own, still holds its batch. Leases its revisions broke (`broken`) are held
   * again as they were before, ahead of what broke them (a buffer adopts its first hold).
   */
  private rebuild(ended: readonly BufferHold[] = [], broken: readonly BufferHold[] = []): void {
    const buffers = [...broken, ...this.state.buffers.holds(), ...ended];
    const pushes = this.state.pushes.leases();
    // The rebuilt buffers' parts carry no body: a flush reads each from its row, so nothing of
    // a write that was rolled back survives in memory.
    this.state = loadState(this.db, this.rows, this.now, this.maxCorrelationGroups, this.state.lastToken);
    for (const hold of buffers) this.state.buffers.adopt(hold);
    for (const { sessionKey, lease } of pushes) this.state.pushes.adopt(sessionKey, lease);
  }
}

function isConstraint(error: unknown): boolean {
  return error instanceof Database.SqliteError && error.code.startsWith('SQLITE_CONSTRAINT');
}
