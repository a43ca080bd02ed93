import type Database from 'better-sqlite3';
import {
  isBudgetBuffer,
  outboxRecord,
  type DeliveryState,
  type OutboxDraft,
  type OutboxRecord,
} from '../../core/ports/index.js';
import { type BufferedPart, type CorrelationRecord } from '../../events/inbound.js';
import type { Rows } from '../local/rows.js';
import { SqliteBudgets } from './budgets.js';
import type { BufferRule, ClaimSpec } from '../../core/ports/index.js';

export const schema = `
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
-- Shared values (access tokens, a poller's cursor): kept across restarts until their time is up.
CREATE TABLE IF NOT EXISTS shared_values (name TEXT PRIMARY KEY, value TEXT NOT NULL, until INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claim_log (key TEXT NOT NULL, space TEXT NOT NULL, ttl_ms INTEGER NOT NULL, max_keys INTEGER NOT NULL, expires_at INTEGER NOT NULL);
-- One index serves both purges (expired rows of a space; a space's rows past its cap, oldest
-- expiry first). It replaced two, (expires_at) and (space): every claim was three B-tree
-- inserts and three WAL pages per admission, and is now two.
DROP INDEX IF EXISTS claim_log_expiry;
DROP INDEX IF EXISTS claim_log_space;
CREATE INDEX IF NOT EXISTS claim_log_space_expiry ON claim_log (space, expires_at);
CREATE TABLE IF NOT EXISTS correlation_groups (
  key TEXT PRIMARY KEY, kind TEXT NOT NULL, first_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, time INTEGER NOT NULL, deliveries TEXT NOT NULL
);
-- Part ids keep growing across restarts, even after the newest part is flushed: the store
-- numbers them itself above a mark kept in \`meta\` (see \`SqliteRows.partAdded\`). AUTOINCREMENT
-- did the same with a write to sqlite_sequence, a WAL page more, on every admission; a file
-- made before keeps its AUTOINCREMENT table, which is as right and a little slower.
-- A part carries its buffer's session and rule: a buffer is the parts of one debounce key, and
-- its deadline follows from them, so neither is written again per message.
CREATE TABLE IF NOT EXISTS parts (
  id INTEGER PRIMARY KEY, debounce_key TEXT NOT NULL, received_at INTEGER NOT NULL,
  unit TEXT, closes INTEGER NOT NULL, body TEXT NOT NULL,
  session_key TEXT NOT NULL DEFAULT '', window_ms INTEGER NOT NULL DEFAULT 0, max_wait_ms INTEGER NOT NULL DEFAULT 0,
  max_messages INTEGER NOT NULL DEFAULT 1
);
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
  updated_at INTEGER NOT NULL,
  next_attempt_at INTEGER,
  message_ids TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS outbox_state ON outbox (state, seq) WHERE state IN ('pending', 'dead');
-- Agent turns: each change of a session's turn, appended; a session's newest row is its turn
-- (an empty output_id: none), with the rule its held buffer (parts under the key
-- '~turn:<session>') was held under. Appended, every row of a group commit lands on the same
-- last page: a table keyed by session wrote a page of its own for every turn opened
-- (bench/turn-commit.mjs). Compacted by \`SqliteRows.purge\`.
CREATE TABLE IF NOT EXISTS turn_log (
  seq INTEGER PRIMARY KEY, session_key TEXT NOT NULL, output_id TEXT NOT NULL, opened_at INTEGER NOT NULL, until INTEGER NOT NULL,
  held_mode TEXT, held_max_ms INTEGER, held_max INTEGER
);
`;

interface OutboxRow {
  seq: number;
  id: string;
  type: string;
  session_key: string;
  channel: string;
  created_at: number;
  body: string;
  state: string;
  attempts: number;
  last_error: string | null;
  updated_at: number;
  next_attempt_at: number | null;
  message_ids: string;
}

export function toRecord(row: OutboxRow): OutboxRecord {
  const record: OutboxRecord = {
    seq: row.seq,
    id: row.id,
    type: row.type as OutboxRecord['type'],
    sessionKey: row.session_key,
    channel: row.channel,
    createdAt: row.created_at,
    body: row.body,
    state: row.state as DeliveryState,
    attempts: row.attempts,
    updatedAt: row.updated_at,
    messageIds: JSON.parse(row.message_ids) as string[],
  };
  if (row.last_error !== null) record.lastError = row.last_error;
  if (row.next_attempt_at !== null) record.nextAttemptAt = row.next_attempt_at;
  return record;
}

/**
 * How many claims are logged between two purges of the claim log. Once keys expire (after
 * `idTtlMs` of traffic), a purge deletes about this many rows inside a commit on the event
 * loop: 2.8 ms for 4,096 rows, 0.47 ms for 512 (scratch, better-sqlite3, a 1.5 million-row log).
 */
const PURGE_EVERY = 512;
/** Turn rows appended before the turn log is first compacted (see `SqliteRows.compactTurns`). */
const TURN_ROWS_BEFORE_COMPACT = 10_000;
/** Part ids reserved per write of the mark in \`meta\`: a restart skips at most this many. */
const PART_IDS_PER_MARK = 65_536;

/** The rows of the SQLite store; every method runs inside the store's current transaction. */
export class SqliteRows extends SqliteBudgets implements Rows {
  private readonly statements;
  /** space -> its cap, for the purge of claim rows evicted from memory. */
  readonly spaces = new Map<string, number>();
  /**
   * space -> its rows in the log, or more (claims a rolled-back write logged); none: counted at
   * the next purge. Only a space past its cap is cut: the cut reads the space's index from its
   * newest row down to the cap, 72 ms at a million rows (scratch, better-sqlite3), and ran at
   * every purge, every 512 claims, once traffic had filled the log.
   */
  private readonly spaceRows = new Map<string, number>();
  private loggedSincePurge = 0;
  /** Turn rows appended since the turn log was compacted, and how many make it due again. */
  private turnsLogged = 0;
  private turnsCompactAt = TURN_ROWS_BEFORE_COMPACT;
  /** The next part id, and the mark in \`meta\` no id of this run may pass without moving it. */
  private nextPartId: number;
  private partMark: number;

  constructor(private readonly db: Database.Database) {
    super(db);
    this.statements = {
      logClaim: db.prepare('INSERT INTO claim_log (key, space, ttl_ms, max_keys, expires_at) VALUES (?, ?, ?, ?, ?)'),
      purgeExpiredClaims: db.prepare('DELETE FROM claim_log WHERE space = ? AND expires_at <= ?'),
      // The log replays into tables capped at maxKeys per space: older rows are dead weight.
      // The newest maxKeys are kept, by expiry and then by insertion (the index's own order).
      spaceCut: db
        .prepare(
          'SELECT expires_at, rowid FROM claim_log WHERE space = ? ORDER BY expires_at DESC, rowid DESC LIMIT 1 OFFSET ?',
        )
        .raw(),
      purgeSpace: db.prepare('DELETE FROM claim_log WHERE space = ? AND (expires_at, rowid) < (?, ?)'),
      spaceRows: db.prepare('SELECT count(*) FROM claim_log WHERE space = ?').pluck(),
      saveGroup:
        db.prepare(`INSERT INTO correlation_groups (key, kind, first_at, expires_at, time, deliveries) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, first_at = excluded.first_at, expires_at = excluded.expires_at,
        time = excluded.time, deliveries = excluded.deliveries`),
      dropGroup: db.prepare('DELETE FROM correlation_groups WHERE key = ?'),
      purgeGroups: db.prepare('DELETE FROM correlation_groups WHERE expires_at <= ?'),
      addPart:
        db.prepare(`INSERT INTO parts (id, debounce_key, received_at, unit, closes, body, session_key, window_ms, max_wait_ms, max_messages)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      partBody: db.prepare('SELECT body FROM parts WHERE id = ?').pluck(),
      setMark: db.prepare(
        "INSERT INTO meta (name, value) VALUES ('part_mark', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      ),
      deletePart: db.prepare('DELETE FROM parts WHERE id = ?'),
      append:
        db.prepare(`INSERT INTO outbox (id, type, session_key, channel, created_at, body, state, updated_at, next_attempt_at, message_ids)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      bySeq: db.prepare('SELECT * FROM outbox WHERE seq = ?'),
      saveRecord: db.prepare(
        'UPDATE outbox SET state = ?, attempts = ?, last_error = ?, updated_at = ?, next_attempt_at = ? WHERE seq = ?',
      ),
      deadById: db.prepare("SELECT * FROM outbox WHERE id = ? AND state = 'dead'"),
      dead: db.prepare("SELECT * FROM outbox WHERE state = 'dead' ORDER BY seq LIMIT ?"),
      sessionOf: db.prepare('SELECT session_key FROM outbox WHERE id = ?').pluck(),
      holdPart: db.prepare('UPDATE parts SET debounce_key = ?, closes = ?, max_messages = ? WHERE id = ?'),
      saveTurn: db.prepare(
        'INSERT INTO turn_log (session_key, output_id, opened_at, until, held_mode, held_max_ms, held_max) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      // Rows a later row of their session replaces, then the rows saying "no turn" left newest.
      compactTurns: db.prepare(
        'DELETE FROM turn_log WHERE seq NOT IN (SELECT max(seq) FROM turn_log GROUP BY session_key)',
      ),
      dropNoTurns: db.prepare("DELETE FROM turn_log WHERE output_id = ''"),
      turnRows: db.prepare('SELECT count(*) FROM turn_log').pluck(),
    };
    // Above every id used before: the mark, the parts still open, and (a file made with
    // AUTOINCREMENT) the sequence SQLite kept for them, read only for such a file.
    const used = (sql: string) => (db.prepare(sql).pluck().get() as number | null | undefined) ?? 0;
    const partsTable = db
      .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'parts'")
      .pluck()
      .get() as string;
    const last = Math.max(
      used("SELECT value FROM meta WHERE name = 'part_mark'"),
      used('SELECT max(id) FROM parts'),
      /AUTOINCREMENT/i.test(partsTable) ? used("SELECT seq FROM sqlite_sequence WHERE name = 'parts'") : 0,
    );
    // No write here: the first part of this run moves the mark, in its own transaction. After a
    // crash with a long WAL, a statement here (a write, or the first read of sqlite_sequence)
    // cost 150 ms before the service listened (bench/restart.mjs).
    this.nextPartId = last + 1;
    this.partMark = last;
  }

  /**
   * A transaction rolled back, and with it maybe a move of the part-id mark: the next part
   * writes the mark again (ids handed out meanwhile are a gap, never repeated); the
   * conversation heads it kept are read again from the rows.
   */
  rolledBack(): void {
    this.partMark = 0;
    this.spaceRows.clear();
    this.conversationsRolledBack();
  }

  claimTaken(claim: ClaimSpec, now: number): void {
    this.statements.logClaim.run(claim.key, claim.space, claim.ttlMs, claim.maxKeys, now + claim.ttlMs);
    this.spaces.set(claim.space, claim.maxKeys);
    const rows = this.spaceRows.get(claim.space);
    if (rows !== undefined) this.spaceRows.set(claim.space, rows + 1);
    this.loggedSincePurge++;
  }

  /** Whether enough claims were logged since the last purge. */
  get purgeDue(): boolean {
    return this.loggedSincePurge >= PURGE_EVERY || this.turnsLogged >= this.turnsCompactAt;
  }

  /**
   * Bound the claim log: drop expired rows, and rows of keys the claim table evicted past its
   * cap (the newest `maxKeys` rows of each space are kept). Between purges a space therefore
   * holds at most min(claim rate x ttlMs, maxKeys) + PURGE_EVERY rows. Every space in the log
   * is in `spaces`: the load at start names each one it reads, expired or not.
   */
  purge(now: number): void {
    this.loggedSincePurge = 0;
    for (const [space, maxKeys] of this.spaces) {
      let rows = this.spaceRows.get(space) ?? (this.statements.spaceRows.get(space) as number);
      rows -= this.statements.purgeExpiredClaims.run(space, now).changes;
      if (rows > maxKeys) {
        const cut = this.statements.spaceCut.get(space, maxKeys - 1) as [number, number] | undefined;
        if (cut) this.statements.purgeSpace.run(space, cut[0], cut[1]);
        rows = cut ? maxKeys : (this.statements.spaceRows.get(space) as number);
      }
      this.spaceRows.set(space, rows);
    }
    this.statements.purgeGroups.run(now);
    this.purgeConversations(now);
    this.purgeBudgets(now);
    if (this.turnsLogged >= this.turnsCompactAt) this.compactTurns();
  }

  /**
   * Keep each session's newest turn row only. Next due once as many rows were appended as are
   * left (at least TURN_ROWS_BEFORE_COMPACT): the log stays under about twice the turns it
   * holds, and each row appended pays for about one row compacted.
   */
  private compactTurns(): void {
    this.statements.compactTurns.run();
    this.statements.dropNoTurns.run();
    this.turnsLogged = 0;
    this.turnsCompactAt = Math.max(TURN_ROWS_BEFORE_COMPACT, this.statements.turnRows.get() as number);
  }

  groupSaved(group: CorrelationRecord): void {
    this.statements.saveGroup.run(
      group.key,
      group.kind,
      group.firstAt,
      group.expiresAt,
      group.time,
      JSON.stringify(group.deliveries),
    );
  }

  groupsDropped(groups: readonly CorrelationRecord[]): void {
    for (const group of groups) this.statements.dropGroup.run(group.key);
  }

  /**
   * Ids are numbered here, below a mark kept in `meta` that moves (in the same transaction) once
   * every PART_IDS_PER_MARK parts; a restart starts above the mark. A transaction that rolls
   * back leaves a gap, never a repeat.
   */
  partAdded(part: Omit<BufferedPart, 'id'>, unit: string | undefined, closes: boolean, rule: BufferRule): string {
    const id = this.nextPartId++;
    if (id > this.partMark) {
      this.partMark = id + PART_IDS_PER_MARK - 1;
      this.statements.setMark.run(this.partMark);
    }
    this.statements.addPart.run(
      id,
      part.debounceKey,
      part.receivedAt,
      unit ?? null,
      closes ? 1 : 0,
      JSON.stringify(part),
      part.event.sessionKey,
      rule.windowMs,
      rule.maxWaitMs,
      rule.maxMessages,
    );
    return String(id);
  }

  partBodies(ids: readonly string[]): BufferedPart[] {
    return ids.map((id) => ({
      ...(JSON.parse(this.statements.partBody.get(Number(id)) as string) as Omit<BufferedPart, 'id'>),
      id,
    }));
  }

  partsDeleted(ids: readonly string[]): void {
    for (const id of ids) this.statements.deletePart.run(Number(id));
  }

  /** Buffers are not rows: each part carries its buffer's session and rule (see the schema), a deferred one its due time. */
  bufferSaved(): void {}
  bufferDropped(debounceKey: string): void {
    if (isBudgetBuffer(debounceKey)) this.deferredDropped(debounceKey);
  }

  outboxAppended(draft: OutboxDraft, now: number): OutboxRecord {
    const { id, type, sessionKey, channel, createdAt, body, state } = draft;
    const nextAttemptAt = state === 'pending' ? now : undefined;
    const seq = Number(
      this.statements.append.run(
        id,
        type,
        sessionKey,
        channel,
        createdAt,
        body,
        state,
        now,
        nextAttemptAt ?? null,
        JSON.stringify(draft.messageIds),
      ).lastInsertRowid,
    );
    return outboxRecord(draft, seq, 0, now, nextAttemptAt);
  }

  record(seq: number): OutboxRecord | undefined {
    const row = this.statements.bySeq.get(seq) as OutboxRow | undefined;
    return row && toRecord(row);
  }

  handOut(record: OutboxRecord): OutboxRecord {
    return record; // read fresh from the table by `record` / `deadRecords`: the caller's own already
  }

  recordSaved(record: OutboxRecord): void {
    this.statements.saveRecord.run(
      record.state,
      record.attempts,
      record.lastError ?? null,
      record.updatedAt,
      record.nextAttemptAt ?? null,
      record.seq,
    );
  }

  outputSession(id: string): string | undefined {
    return (this.statements.sessionOf.get(id) as string | undefined) ?? undefined;
  }

  partsHeld(ids: readonly string[], debounceKey: string, closes: readonly boolean[], maxHeld: number): void {
    ids.forEach((id, i) => this.statements.holdPart.run(debounceKey, closes[i] ? 1 : 0, maxHeld, Number(id)));
  }

  turnSaved(
    sessionKey: string,
    turn: { outputId: string; openedAt: number; until: number },
    held: { mode: string; maxMs: number; maxHeld: number } | undefined,
  ): void {
    this.statements.saveTurn.run(
      sessionKey,
      turn.outputId,
      Math.floor(turn.openedAt),
      Math.floor(turn.until),
      held?.mode ?? null,
      held?.maxMs ?? null,
      held?.maxHeld ?? null,
    );
    this.turnsLogged++;
  }

  turnDropped(sessionKey: string): void {
    this.statements.saveTurn.run(sessionKey, '', 0, 0, null, null, null);
    this.turnsLogged++;
  }

  deadRecords(id: string | undefined, limit: number): OutboxRecord[] {
    const rows = (id === undefined ? this.statements.dead.all(limit) : this.statements.deadById.all(id)) as OutboxRow[];
    return rows.map(toRecord);
  }
}
