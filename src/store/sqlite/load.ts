import type Database from 'better-sqlite3';
import type { BufferedPart, EventKind } from '../../events/inbound.js';
import { isBudgetBuffer, turnBufferKey } from '../../core/ports/index.js';
import type { OpenBuffer } from '../local/buffers.js';
import { LocalState } from '../local/local-state.js';
import type { SqliteRows } from './rows.js';

/** Columns added to the outbox after its first release: files made before get them at open. */
const addedColumns: ReadonlyArray<[string, string]> = [
  ['next_attempt_at', 'INTEGER'],
  ['message_ids', "TEXT NOT NULL DEFAULT '[]'"],
];

/** Bring a file written by an older release up to the current schema. */
export function migrate(db: Database.Database): void {
  const have = new Set((db.pragma('table_info(outbox)') as Array<{ name: string }>).map((column) => column.name));
  for (const [name, type] of addedColumns)
    if (!have.has(name)) db.exec(`ALTER TABLE outbox ADD COLUMN ${name} ${type}`);
  migrateBufferedParts(db);
  migrateTurns(db);
}

/** Turns kept by an earlier build (table `turns`, one row per session) move into the turn log. */
function migrateTurns(db: Database.Database): void {
  if (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'turns'").pluck().get() === undefined)
    return;
  db.transaction(() => {
    db.exec(`INSERT INTO turn_log (session_key, output_id, opened_at, until, held_mode, held_max_ms, held_max)
      SELECT session_key, output_id, opened_at, until, held_mode, held_max_ms, held_max FROM turns ORDER BY opened_at`);
    db.exec('DROP TABLE turns');
  })();
}

/**
 * Parts acknowledged by an earlier version (table `buffered`, no buffer rules) move into the
 * buffers of this one, due at once: they waited out their window while the service was being
 * upgraded, and nothing acknowledged may be dropped on the way.
 */
function migrateBufferedParts(db: Database.Database): void {
  const old = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'buffered'").pluck().get();
  if (old === undefined) return;
  // A zero window and wait: due at once; no count closes it early.
  const addPart =
    db.prepare(`INSERT INTO parts (debounce_key, received_at, unit, closes, body, session_key, window_ms, max_wait_ms, max_messages)
    VALUES (?, ?, NULL, 0, ?, ?, 0, 0, ?)`);
  db.transaction(() => {
    for (const row of db.prepare('SELECT body FROM buffered ORDER BY id').all() as Array<{ body: string }>) {
      const { id: _id, ...part } = JSON.parse(row.body) as BufferedPart;
      addPart.run(
        part.debounceKey,
        part.receivedAt,
        JSON.stringify(part),
        part.event.sessionKey,
        Number.MAX_SAFE_INTEGER,
      );
    }
    db.exec('DROP TABLE buffered');
  })();
}

/** Raw rows, column by column as selected. */
type ClaimRow = [key: string, space: string, ttlMs: number, maxKeys: number, expiresAt: number];
interface GroupRow {
  key: string;
  kind: string;
  first_at: number;
  expires_at: number;
  time: number;
  deliveries: string;
}
type PartRow = [
  id: number,
  debounceKey: string,
  receivedAt: number,
  unit: string | null,
  closes: number,
  sessionKey: string,
  windowMs: number,
  maxWaitMs: number,
  maxMessages: number,
];
type TurnRow = [
  sessionKey: string,
  outputId: string,
  openedAt: number,
  until: number,
  heldMode: string | null,
  heldMaxMs: number | null,
];
interface PendingRow {
  seq: number;
  session_key: string;
  next_attempt_at: number | null;
}

/**
 * Rebuild the in-memory indexes from the rows: claims from the log (oldest first, so each
 * table's FIFO order holds), live correlation groups, buffers with their parts' metadata (not
 * their bodies, read at claim time: start-up stays cheap with many parts buffered), and the
 * push queues of pending records (ids and due times only).
 */
export function loadState(
  db: Database.Database,
  rows: SqliteRows,
  now: number,
  maxCorrelationGroups: number,
  tokenBase: number,
): LocalState {
  const steps = loadSteps(db, rows, now, maxCorrelationGroups, tokenBase);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Rows read between two turns of the event loop by `loadStateInChunks`. */
const ROWS_PER_CHUNK = 4096;

/**
 * `loadState` in chunks of rows with a turn of the event loop between them: at start-up with
 * 10^5 buffered parts the load takes most of a second, and `/healthz` still answers meanwhile.
 * Nothing else may use the connection until it resolves (its statements are mid-iteration).
 */
export async function loadStateInChunks(
  db: Database.Database,
  rows: SqliteRows,
  now: number,
  maxCorrelationGroups: number,
  tokenBase: number,
): Promise<LocalState> {
  const steps = loadSteps(db, rows, now, maxCorrelationGroups, tokenBase);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** The load, yielding after every ROWS_PER_CHUNK rows. */
function* loadSteps(
  db: Database.Database,
  rows: SqliteRows,
  now: number,
  maxCorrelationGroups: number,
  tokenBase: number,
): Generator<void, LocalState> {
  let read = 0;
  const dead = db.prepare("SELECT count(*) FROM outbox WHERE state = 'dead'").pluck().get() as number;
  const state = new LocalState(rows, { maxCorrelationGroups, tokenBase, dead, keepHeld: true });

  // Rows as arrays (`raw`): at start-up with 10^5 rows of a kind, building an object per row
  // costs about a third of the read.
  // Expired rows too: the purges run per space, so every space in the log must be named
  // (`rows.spaces`), even one whose rows have all expired.
  const claims = db.prepare('SELECT key, space, ttl_ms, max_keys, expires_at FROM claim_log ORDER BY rowid').raw();
  let last: ClaimRow | undefined;
  let table: ReturnType<LocalState['claims']['table']> | undefined;
  for (const row of claims.iterate() as Iterable<ClaimRow>) {
    const [key, space, ttlMs, maxKeys, expiresAt] = row;
    if (++read % ROWS_PER_CHUNK === 0) yield;
    if (expiresAt <= now) {
      if (!rows.spaces.has(space)) rows.spaces.set(space, maxKeys);
      continue;
    }
    // The log runs in long stretches of one space and TTL: look the table up when they change.
    if (!table || !last || space !== last[1] || ttlMs !== last[2] || maxKeys !== last[3]) {
      table = state.claims.table({ space, ttlMs, maxKeys });
      rows.spaces.set(space, maxKeys);
    }
    last = row;
    table.restore(key, expiresAt, now);
  }

  const groups = db.prepare('SELECT * FROM correlation_groups WHERE expires_at > ? ORDER BY first_at, rowid');
  for (const row of groups.iterate(now) as Iterable<GroupRow>) {
    const group = {
      key: row.key,
      kind: row.kind as EventKind,
      firstAt: row.first_at,
      expiresAt: row.expires_at,
      time: row.time,
      deliveries: JSON.parse(row.deliveries),
    };
    // A lower cap than the last run's: the oldest groups go, as they would have then.
    state.groups.add(group, now);
    if (++read % ROWS_PER_CHUNK === 0) yield;
  }

  // Buffers are the parts of each debounce key, in arrival order, under the rule of the part
  // that opened them; their deadlines follow from the parts (a released retry time is not kept:
  // a rebuild in the same process carries it over, see `SqliteStore.rebuild`).
  const buffers = new Map<string, OpenBuffer>();
  // Buffers opened under one configuration share one rule object.
  const rules = new Map<string, OpenBuffer['rule']>();
  const parts = db
    .prepare(
      'SELECT id, debounce_key, received_at, unit, closes, session_key, window_ms, max_wait_ms, max_messages FROM parts ORDER BY id',
    )
    .raw();
  for (const [
    rowId,
    debounceKey,
    receivedAt,
    unit,
    closes,
    sessionKey,
    windowMs,
    maxWaitMs,
    maxMessages,
  ] of parts.iterate() as Iterable<PartRow>) {
    let buffer = buffers.get(debounceKey);
    if (!buffer) {
      const ruleKey = `${windowMs}:${maxWaitMs}:${maxMessages}`;
      let rule = rules.get(ruleKey);
      if (!rule) rules.set(ruleKey, (rule = { windowMs, maxWaitMs, maxMessages }));
      buffers.set(
        debounceKey,
        (buffer = {
          debounceKey,
          sessionKey,
          rule,
          parts: [],
          deadline: now,
          reason: 'window',
          lease: undefined,
          stamp: 0,
          taken: undefined,
        }),
      );
    }
    const id = String(rowId);
    buffer.parts.push({ id, receivedAt, unit: unit ?? id, closes: closes === 1, body: undefined });
    if (++read % ROWS_PER_CHUNK === 0) yield;
  }
  // Turns (each session's newest row of the log), and the rule held buffers were held under: a
  // mode changed since releases them by it. Restored oldest opened first, the order the table sweeps.
  const newest = new Map<string, TurnRow>();
  for (const row of db
    .prepare('SELECT session_key, output_id, opened_at, until, held_mode, held_max_ms FROM turn_log ORDER BY seq')
    .raw()
    .iterate() as Iterable<TurnRow>) {
    if (row[1] === '') newest.delete(row[0]);
    else newest.set(row[0], row);
  }
  for (const [sessionKey, outputId, openedAt, until, heldMode, heldMaxMs] of [...newest.values()].sort(
    (a, b) => a[2] - b[2],
  )) {
    state.turns.restore(sessionKey, { outputId, openedAt, until });
    const held = buffers.get(turnBufferKey(sessionKey));
    if (held)
      held.held = {
        by: outputId,
        until,
        mode: heldMode === 'followup' ? 'followup' : 'collect',
        maxMs: heldMaxMs ?? 0,
      };
  }
  // Buffers of deferred batches: due when their budget allows (see `OpenBuffer.deferred`).
  for (const [debounceKey, dueAt] of db
    .prepare('SELECT debounce_key, due_at FROM budget_buffers')
    .raw()
    .iterate() as Iterable<[string, number]>) {
    const deferred = buffers.get(debounceKey);
    if (deferred) deferred.deferred = dueAt;
  }
  for (const buffer of buffers.values()) {
    // A held buffer without its turn's row (none is written apart from it): due at once.
    if (buffer.debounceKey.startsWith('~turn:') && !buffer.held)
      buffer.held = { by: '', until: now, mode: 'collect', maxMs: 0 };
    // So is a buffer of deferred batches without its due time: still one batch.
    if (isBudgetBuffer(buffer.debounceKey) && buffer.deferred === undefined) buffer.deferred = now;
    const { deadline, reason } = state.buffers.deadlineOf(buffer, now);
    buffer.deadline = deadline;
    buffer.reason = reason;
    state.buffers.restore(buffer);
    if (++read % ROWS_PER_CHUNK === 0) yield;
  }

  const pending = db.prepare(
    "SELECT seq, session_key, next_attempt_at FROM outbox WHERE state = 'pending' ORDER BY seq",
  );
  for (const row of pending.iterate() as Iterable<PendingRow>) {
    state.pushes.enqueue(row.session_key, { seq: row.seq, nextAttemptAt: row.next_attempt_at ?? now });
    if (++read % ROWS_PER_CHUNK === 0) yield;
  }
  return state;
}
