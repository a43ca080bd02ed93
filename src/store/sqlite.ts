import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type {
  Admission, AdmitResult, BufferedPart, DeliveryState, DeliveryUpdate, OutboxDraft, OutboxRecord, Store,
} from './types.js';

const schema = `
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS claims_expiry ON claims (expires_at);
CREATE TABLE IF NOT EXISTS parts (id TEXT PRIMARY KEY, debounce_key TEXT NOT NULL, received_at INTEGER NOT NULL, body TEXT NOT NULL);
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
CREATE INDEX IF NOT EXISTS outbox_created ON outbox (created_at);
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

/** How many admissions pass between two sweeps of expired claims. */
const PURGE_EVERY = 1024;

/**
 * The embedded durable store (better-sqlite3, WAL). Every method is one transaction; a
 * delivery's claims and buffer entries commit together or not at all. `synchronous=NORMAL`
 * in WAL mode survives a process crash (kill -9); `INTAKE_SQLITE_SYNC=full` is not needed
 * for that, only for power loss.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly durable = true;
  private readonly db: Database.Database;
  private admitsSincePurge = 0;
  private readonly statements;
  private readonly admitTx;
  private readonly flushTx;

  constructor(readonly path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(schema);
    const db = this.db;
    this.statements = {
      claim: db.prepare(`INSERT INTO claims (key, expires_at) VALUES (?, ?)
        ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE claims.expires_at <= ?`),
      purgeClaims: db.prepare('DELETE FROM claims WHERE expires_at <= ?'),
      countClaims: db.prepare('SELECT count(*) AS n FROM claims'),
      insertPart: db.prepare('INSERT INTO parts (id, debounce_key, received_at, body) VALUES (?, ?, ?, ?)'),
      deletePart: db.prepare('DELETE FROM parts WHERE id = ?'),
      openParts: db.prepare('SELECT body FROM parts ORDER BY rowid'),
      append: db.prepare(`INSERT INTO outbox (id, type, session_key, channel, created_at, body, state, updated_at)
        VALUES (@id, @type, @sessionKey, @channel, @createdAt, @body, @state, @createdAt) RETURNING seq`),
      after: db.prepare('SELECT * FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?'),
      byId: db.prepare('SELECT * FROM outbox WHERE id = ?'),
      byState: db.prepare('SELECT * FROM outbox WHERE state = ? ORDER BY seq LIMIT ?'),
      countState: db.prepare('SELECT count(*) AS n FROM outbox WHERE state = ?'),
      setDelivery: db.prepare('UPDATE outbox SET state = ?, attempts = ?, last_error = ?, updated_at = ? WHERE id = ?'),
      trimOld: db.prepare(`DELETE FROM outbox WHERE created_at < ? AND state NOT IN ('pending', 'dead')`),
      trimCount: db.prepare(`DELETE FROM outbox WHERE seq <= (SELECT seq FROM outbox ORDER BY seq DESC LIMIT 1 OFFSET ?)
        AND state NOT IN ('pending', 'dead')`),
    };
    this.admitTx = db.transaction((admissions: readonly Admission[], now: number): AdmitResult[] => {
      const results: AdmitResult[] = [];
      for (const admission of admissions) {
        let taken = -1;
        for (let i = 0; i < admission.claims.length; i++) {
          const claim = admission.claims[i]!;
          if (this.statements.claim.run(claim.key, now + claim.ttlMs, now).changes === 0) {
            taken = i;
            break;
          }
        }
        if (taken !== -1) {
          results.push({ taken });
          continue;
        }
        const part = admission.part;
        if (part) this.statements.insertPart.run(part.id, part.debounceKey, part.receivedAt, JSON.stringify(part));
        results.push(admission.emit ? { taken, record: this.append(admission.emit) } : { taken });
      }
      return results;
    });
    this.flushTx = db.transaction((partIds: readonly string[], draft: OutboxDraft): OutboxRecord => {
      for (const id of partIds) this.statements.deletePart.run(id);
      return this.append(draft);
    });
  }

  private append(draft: OutboxDraft): OutboxRecord {
    const { seq } = this.statements.append.get(draft) as { seq: number };
    return { ...draft, seq, attempts: 0, updatedAt: draft.createdAt };
  }

  async admit(admissions: readonly Admission[], now: number): Promise<AdmitResult[]> {
    if (++this.admitsSincePurge >= PURGE_EVERY) {
      this.admitsSincePurge = 0;
      this.statements.purgeClaims.run(now);
    }
    return this.admitTx(admissions, now);
  }

  async openParts(): Promise<BufferedPart[]> {
    return (this.statements.openParts.all() as Array<{ body: string }>).map((row) => JSON.parse(row.body) as BufferedPart);
  }

  async flush(partIds: readonly string[], draft: OutboxDraft): Promise<OutboxRecord> {
    return this.flushTx(partIds, draft);
  }

  async outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]> {
    return (this.statements.after.all(seq, limit) as OutboxRow[]).map(toRecord);
  }

  async outboxGet(id: string): Promise<OutboxRecord | undefined> {
    const row = this.statements.byId.get(id) as OutboxRow | undefined;
    return row && toRecord(row);
  }

  async trimOutbox(olderThan: number, keepCount: number): Promise<number> {
    return this.statements.trimOld.run(olderThan).changes + this.statements.trimCount.run(keepCount).changes;
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
    this.statements.setDelivery.run(update.state, update.attempts, update.lastError ?? null, update.now, id);
  }

  claimStats(): { keys: number; evicted: number } {
    return { keys: (this.statements.countClaims.get() as { n: number }).n, evicted: 0 };
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
