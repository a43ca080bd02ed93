import type Database from 'better-sqlite3';
import type { BufferedPart, EventKind } from '../events.js';
import type { OpenBuffer, PartMeta } from './buffers.js';
import { LocalState } from './local-state.js';
import type { SqliteRows } from './sqlite-rows.js';
import type { FlushReason } from './types.js';

/** Columns added to the outbox after its first release: files made before get them at open. */
const addedColumns: ReadonlyArray<[string, string]> = [
  ['next_attempt_at', 'INTEGER'],
  ['message_ids', "TEXT NOT NULL DEFAULT '[]'"],
];

/** Bring a file written by an older release up to the current schema. */
export function migrate(db: Database.Database): void {
  const have = new Set((db.pragma('table_info(outbox)') as Array<{ name: string }>).map((column) => column.name));
  for (const [name, type] of addedColumns) if (!have.has(name)) db.exec(`ALTER TABLE outbox ADD COLUMN ${name} ${type}`);
  migrateBufferedParts(db);
}

/**
 * Parts acknowledged by an earlier version (table `buffered`, no buffer rules) move into the
 * buffers of this one, due at once: they waited out their window while the service was being
 * upgraded, and nothing acknowledged may be dropped on the way.
 */
function migrateBufferedParts(db: Database.Database): void {
  const old = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'buffered'").pluck().get();
  if (old === undefined) return;
  const addPart = db.prepare('INSERT INTO parts (debounce_key, received_at, unit, closes, body) VALUES (?, ?, NULL, 0, ?)');
  const addBuffer = db.prepare(`INSERT INTO buffers (debounce_key, session_key, window_ms, max_wait_ms, max_messages, deadline, reason)
    VALUES (?, ?, 0, 0, ?, ?, 'window') ON CONFLICT (debounce_key) DO NOTHING`);
  db.transaction(() => {
    for (const row of db.prepare('SELECT body FROM buffered ORDER BY id').all() as Array<{ body: string }>) {
      const { id: _id, ...part } = JSON.parse(row.body) as BufferedPart;
      addPart.run(part.debounceKey, part.receivedAt, JSON.stringify(part));
      addBuffer.run(part.debounceKey, part.event.sessionKey, Number.MAX_SAFE_INTEGER, part.receivedAt);
    }
    db.exec('DROP TABLE buffered');
  })();
}

interface ClaimRow { key: string; space: string; ttl_ms: number; max_keys: number; expires_at: number }
interface GroupRow { key: string; kind: string; first_at: number; expires_at: number; time: number; deliveries: string }
interface BufferRow {
  debounce_key: string; session_key: string; window_ms: number; max_wait_ms: number; max_messages: number; deadline: number; reason: string;
}
interface PartRow { id: number; debounce_key: string; received_at: number; unit: string | null; closes: number }
interface PendingRow { seq: number; session_key: string; next_attempt_at: number | null }

/**
 * Rebuild the in-memory indexes from the rows: claims from the log (oldest first, so each
 * table's FIFO order holds), live correlation groups, buffers with their parts' metadata (not
 * their bodies, read at claim time: start-up stays cheap with many parts buffered), and the
 * push queues of pending records (ids and due times only).
 */
export function loadState(db: Database.Database, rows: SqliteRows, now: number, maxCorrelationGroups: number, tokenBase: number): LocalState {
  const dead = db.prepare("SELECT count(*) FROM outbox WHERE state = 'dead'").pluck().get() as number;
  const state = new LocalState(rows, { maxCorrelationGroups, tokenBase, dead });

  const claims = db.prepare('SELECT key, space, ttl_ms, max_keys, expires_at FROM claim_log WHERE expires_at > ? ORDER BY rowid');
  for (const row of claims.iterate(now) as Iterable<ClaimRow>) {
    state.claims.table({ space: row.space, ttlMs: row.ttl_ms, maxKeys: row.max_keys }).restore(row.key, row.expires_at, now);
    rows.spaces.set(row.space, row.max_keys);
  }

  const groups = db.prepare('SELECT * FROM correlation_groups WHERE expires_at > ? ORDER BY first_at, rowid');
  for (const row of groups.iterate(now) as Iterable<GroupRow>) {
    const group = {
      key: row.key, kind: row.kind as EventKind, firstAt: row.first_at, expiresAt: row.expires_at, time: row.time, deliveries: JSON.parse(row.deliveries),
    };
    // A lower cap than the last run's: the oldest groups go, as they would have then.
    state.groups.add(group, now);
  }

  const buffers = new Map<string, OpenBuffer>();
  for (const row of db.prepare('SELECT * FROM buffers').iterate() as Iterable<BufferRow>) {
    buffers.set(row.debounce_key, {
      debounceKey: row.debounce_key, sessionKey: row.session_key,
      rule: { windowMs: row.window_ms, maxWaitMs: row.max_wait_ms, maxMessages: row.max_messages },
      parts: [], units: new Map(), deadline: row.deadline, reason: row.reason as FlushReason, lease: undefined, stamp: 0,
    });
  }
  const parts = db.prepare('SELECT id, debounce_key, received_at, unit, closes FROM parts ORDER BY id');
  for (const row of parts.iterate() as Iterable<PartRow>) {
    const buffer = buffers.get(row.debounce_key);
    if (!buffer) continue;
    const id = String(row.id);
    const part: PartMeta = { id, receivedAt: row.received_at, unit: row.unit ?? id, closes: row.closes === 1 };
    buffer.parts.push(part);
    buffer.units.set(part.unit, (buffer.units.get(part.unit) ?? 0) + 1);
  }
  for (const buffer of buffers.values()) if (buffer.parts.length > 0) state.buffers.restore(buffer);

  const pending = db.prepare("SELECT seq, session_key, next_attempt_at FROM outbox WHERE state = 'pending' ORDER BY seq");
  for (const row of pending.iterate() as Iterable<PendingRow>) {
    state.pushes.enqueue(row.session_key, { seq: row.seq, nextAttemptAt: row.next_attempt_at ?? now });
  }
  return state;
}
