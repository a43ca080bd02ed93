import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ClaimTables } from './claim-table.js';
import type {
  Admission, AdmitResult, BufferedPart, ClaimSpec, DeliveryState, DeliveryUpdate, OutboxDraft, OutboxRecord, Store,
} from './types.js';

const schema = `
CREATE TABLE IF NOT EXISTS claim_log (key TEXT NOT NULL, space TEXT NOT NULL, ttl_ms INTEGER NOT NULL, max_keys INTEGER NOT NULL, expires_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS claim_log_expiry ON claim_log (expires_at);
-- Buffered parts, keyed by their integer id (see part-id.ts): large rows in a rowid table.
CREATE TABLE IF NOT EXISTS buffered (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  session_key TEXT NOT NULL,
  channel TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_state ON outbox (state, seq) WHERE state IN ('pending', 'dead');
DROP INDEX IF EXISTS outbox_created;
`;

interface OutboxRow {
  seq: number; id: string; type: string; session_key: string; channel: string; created_at: number;
  body: string; state: string; attempts: number; last_error: string | null; updated_at: number;
}

function toRecord(row: OutboxRow): OutboxRecord {
  const record: OutboxRecord = {
    seq: row.seq, id: row.id, type: row.type as OutboxRecord['type'], sessionKey: row.session_key, channel: row.channel,
    createdAt: row.created_at, body: row.body, state: row.state as DeliveryState, attempts: row.attempts, updatedAt: row.updated_at,
  };
  if (row.last_error !== null) record.lastError = row.last_error;
  return record;
}

/** How many admissions pass between two sweeps of the expired claim log. */
const PURGE_EVERY = 4096;

/** Claims taken inside a transaction, applied to the live tables only once it commits. */
interface Taken {
  claims: Array<{ claim: ClaimSpec; now: number }>;
  keys: Set<string>;
}
const newTaken = (): Taken => ({ claims: [], keys: new Set() });

/** One write waiting for the next group commit. */
interface PendingWrite {
  run(taken: Taken): unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * The embedded durable store (better-sqlite3, WAL).
 *
 * - Group commit: writes requested in one turn of the event loop share one transaction; each
 *   is acknowledged only after that commit, and one failing write cannot fail the others.
 * - Claims are checked in memory (the same FIFO tables as the memory store) and made durable
 *   in an append-only log that is replayed at start: a hashed key in a B-tree would cost a
 *   random page write per claim, the log costs a sequential one.
 * - `synchronous=NORMAL` in WAL mode survives a process crash (kill -9), not a power cut.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly durable = true;
  private readonly db: Database.Database;
  private readonly claims = new ClaimTables();
  private admitsSincePurge = 0;
  private readonly statements;
  private readonly groupTx;
  private readonly singleTx;
  private queue: PendingWrite[] = [];

  constructor(readonly path: string, now = Date.now()) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(schema);
    const db = this.db;
    this.statements = {
      logClaim: db.prepare('INSERT INTO claim_log (key, space, ttl_ms, max_keys, expires_at) VALUES (?, ?, ?, ?, ?)'),
      liveClaims: db.prepare('SELECT key, space, ttl_ms, max_keys, expires_at FROM claim_log WHERE expires_at > ? ORDER BY rowid'),
      purgeClaims: db.prepare('DELETE FROM claim_log WHERE expires_at <= ?'),
      insertPart: db.prepare('INSERT INTO buffered (id, body) VALUES (?, ?)'),
      deletePart: db.prepare('DELETE FROM buffered WHERE id = ?'),
      openParts: db.prepare('SELECT body FROM buffered ORDER BY id'),
      append: db.prepare(`INSERT INTO outbox (id, type, session_key, channel, created_at, body, state, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
      after: db.prepare('SELECT * FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?'),
      byId: db.prepare('SELECT * FROM outbox WHERE id = ?'),
      byState: db.prepare('SELECT * FROM outbox WHERE state = ? ORDER BY seq LIMIT ?'),
      countState: db.prepare('SELECT count(*) AS n FROM outbox WHERE state = ?'),
      setDelivery: db.prepare('UPDATE outbox SET state = ?, attempts = ?, last_error = ?, updated_at = ? WHERE id = ?'),
      // Seq order is creation order, so the newest record older than the cutoff bounds the trim
      // (found by a short backward scan, with no index on created_at to keep up per insert).
      trimOld: db.prepare(`DELETE FROM outbox WHERE seq <= (SELECT seq FROM outbox WHERE created_at < ? ORDER BY seq DESC LIMIT 1)
        AND state NOT IN ('pending', 'dead')`),
      trimCount: db.prepare(`DELETE FROM outbox WHERE seq <= (SELECT seq FROM outbox ORDER BY seq DESC LIMIT 1 OFFSET ?)
        AND state NOT IN ('pending', 'dead')`),
    };
    this.groupTx = db.transaction((writes: PendingWrite[], taken: Taken) => writes.map((write) => write.run(taken)));
    this.singleTx = db.transaction((write: PendingWrite, taken: Taken) => write.run(taken));
    for (const row of this.statements.liveClaims.iterate(now) as Iterable<{ key: string; space: string; ttl_ms: number; max_keys: number; expires_at: number }>) {
      this.claims.table({ space: row.space, ttlMs: row.ttl_ms, maxKeys: row.max_keys }).restore(row.key, row.expires_at, now);
    }
  }

  private write<T>(run: (taken: Taken) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(() => this.commit());
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  private commit(): void {
    const writes = this.queue;
    this.queue = [];
    try {
      const taken = newTaken();
      const results = this.groupTx(writes, taken);
      this.apply(taken);
      writes.forEach((write, i) => write.resolve(results[i]));
    } catch {
      // The group rolled back: run each write alone so one bad write cannot fail the others.
      for (const write of writes) {
        try {
          const taken = newTaken();
          const result = this.singleTx(write, taken);
          this.apply(taken);
          write.resolve(result);
        } catch (error) {
          write.reject(error);
        }
      }
    }
  }

  private apply(taken: Taken): void {
    for (const { claim, now } of taken.claims) this.claims.table(claim).claim(claim.key, now);
  }

  private append(draft: OutboxDraft): OutboxRecord {
    const { id, type, sessionKey, channel, createdAt, body, state } = draft;
    const seq = Number(this.statements.append.run(id, type, sessionKey, channel, createdAt, body, state, createdAt).lastInsertRowid);
    return { id, type, sessionKey, channel, createdAt, body, state, seq, attempts: 0, updatedAt: createdAt };
  }

  async admit(admissions: readonly Admission[], now: number): Promise<AdmitResult[]> {
    if (++this.admitsSincePurge >= PURGE_EVERY) {
      this.admitsSincePurge = 0;
      void this.write(() => this.statements.purgeClaims.run(now)).catch(() => undefined);
    }
    return this.write((taken) => admissions.map((admission) => this.admitOne(admission, now, taken)));
  }

  private admitOne(admission: Admission, now: number, taken: Taken): AdmitResult {
    for (let i = 0; i < admission.claims.length; i++) {
      const claim = admission.claims[i] as ClaimSpec;
      // Taken before, or earlier in this same transaction (two copies in one delivery).
      if (this.claims.table(claim).has(claim.key, now) || taken.keys.has(claim.key)) return { taken: i };
      taken.claims.push({ claim, now });
      taken.keys.add(claim.key);
      this.statements.logClaim.run(claim.key, claim.space, claim.ttlMs, claim.maxKeys, now + claim.ttlMs);
    }
    if (admission.part) this.statements.insertPart.run(Number(admission.part.id), JSON.stringify(admission.part));
    return admission.emit ? { taken: -1, record: this.append(admission.emit) } : { taken: -1 };
  }

  async openParts(): Promise<BufferedPart[]> {
    return (this.statements.openParts.all() as Array<{ body: string }>).map((row) => JSON.parse(row.body) as BufferedPart);
  }

  async flush(partIds: readonly string[], draft: OutboxDraft): Promise<OutboxRecord> {
    return this.write(() => {
      for (const id of partIds) this.statements.deletePart.run(Number(id));
      return this.append(draft);
    });
  }

  async outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]> {
    return (this.statements.after.all(seq, limit) as OutboxRow[]).map(toRecord);
  }

  async outboxGet(id: string): Promise<OutboxRecord | undefined> {
    const row = this.statements.byId.get(id) as OutboxRow | undefined;
    return row && toRecord(row);
  }

  async trimOutbox(olderThan: number, keepCount: number): Promise<number> {
    return this.write(() => this.statements.trimOld.run(olderThan).changes + this.statements.trimCount.run(keepCount).changes);
  }

  async pendingDeliveries(limit: number): Promise<OutboxRecord[]> {
    return (this.statements.byState.all('pending', limit) as OutboxRow[]).map(toRecord);
  }

  async deadLetters(limit: number): Promise<OutboxRecord[]> {
    return (this.statements.byState.all('dead', limit) as OutboxRow[]).map(toRecord);
  }

  async countByState(state: DeliveryState): Promise<number> {
    return (this.statements.countState.get(state) as { n: number }).n;
  }

  async setDelivery(id: string, update: DeliveryUpdate): Promise<void> {
    await this.write(() => this.statements.setDelivery.run(update.state, update.attempts, update.lastError ?? null, update.now, id));
  }

  claimStats(): { keys: number; evicted: number } {
    return this.claims.stats();
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (this.queue.length > 0) this.commit();
    if (this.db.open) this.db.close();
  }
}
