import type Database from 'better-sqlite3';
import type {
  ActivationModes,
  ContextKeep,
  RevisionKeep,
  TakeoverChange,
  TakeoverHold,
} from '../../core/ports/index.js';
import type { ContextMessage, ConversationState, KeptMessage, Revision, Takeover } from '../../events/context.js';
import type { ConversationRows } from '../local/conversations.js';
import { revisedContext } from '../rules/revise.js';
import { NamedSessions } from './named-sessions.js';
import { SqliteRevisions } from './revisions.js';

/**
 * Conversations (§12 of the contract) in the file: each kept message a row of `context`, whose
 * AUTOINCREMENT key is its seq (never used twice, also after the newest row is deleted); a
 * session's dropped count and the time it is forgotten in `conversations`; overrides set at run
 * time in `activations`, with no expiry; revisions and takeovers in their tables (revisions.ts).
 * Read and written by SQL, the rows the truth: a write rolled back leaves nothing in memory but
 * session names (`NamedSessions`), which may only ever say too much.
 */
export const conversationSchema = `
CREATE TABLE IF NOT EXISTS context (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, session_key TEXT NOT NULL, at INTEGER NOT NULL, message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS context_session ON context (session_key, seq);
CREATE TABLE IF NOT EXISTS conversations (session_key TEXT PRIMARY KEY, dropped INTEGER NOT NULL, until INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS conversations_until ON conversations (until);
CREATE TABLE IF NOT EXISTS activations (session_key TEXT PRIMARY KEY, modes TEXT NOT NULL) WITHOUT ROWID;
`;

/** Heads kept by `heads` at most: past it they are forgotten, and read again as needed. */
const MAX_HEADS = 4096;

/** A session's row of `conversations`, with the count of its context rows. */
interface Head {
  dropped: number;
  until: number;
  count: number;
}

/** The SQLite store's conversation rows; every write runs inside the store's current transaction. */
export class SqliteConversations implements ConversationRows {
  private readonly sql;
  private readonly revisions: SqliteRevisions;
  /**
   * The sessions with a row in `conversations` (their context rows live only beside it:
   * `contextKept` writes both, the purge drops both), and those with a row in `activations`,
   * `takeovers` or `revisions`. A flush reads its session's conversation, and most sessions
   * have neither: `always`, the default, keeps no context, and a batch kept as context in
   * `mention` mode reads the extras alone. Their lookups were 10 µs of a 60 µs message on the
   * SQLite store (bench/pipeline.mjs).
   */
  private readonly withHead: NamedSessions;
  private readonly withExtras: NamedSessions;
  /**
   * The heads `contextKept` wrote, with their context counts: a keep (most batches of a busy
   * group in `mention` mode) read its head and counted its rows every time, then trimmed one
   * row by a subquery. Forgotten by every other write to `context` and by a rollback.
   */
  private readonly heads = new Map<string, Head>();

  constructor(db: Database.Database) {
    db.exec(conversationSchema);
    this.revisions = new SqliteRevisions(db);
    this.sql = {
      head: db.prepare('SELECT dropped, until FROM conversations WHERE session_key = ?'),
      append: db.prepare('INSERT INTO context (session_key, at, message) VALUES (?, ?, ?)'),
      count: db.prepare('SELECT count(*) FROM context WHERE session_key = ?').pluck(),
      // The session's oldest rows, up to the seq of the last to go: a range of the index, where
      // `seq IN (SELECT ... LIMIT ?)` built a temporary table of the seqs first.
      trim: db.prepare(
        `DELETE FROM context WHERE session_key = @session
        AND seq <= (SELECT seq FROM context WHERE session_key = @session ORDER BY seq LIMIT 1 OFFSET @skip)`,
      ),
      forget: db.prepare('DELETE FROM context WHERE session_key = ?'),
      save: db.prepare(
        `INSERT INTO conversations (session_key, dropped, until) VALUES (?, ?, ?)
        ON CONFLICT (session_key) DO UPDATE SET dropped = excluded.dropped, until = excluded.until`,
      ),
      clear: db.prepare('DELETE FROM context WHERE session_key = ? AND seq <= ?'),
      resetDropped: db.prepare('UPDATE conversations SET dropped = 0 WHERE session_key = ?'),
      dropEmpty: db.prepare(
        'DELETE FROM conversations WHERE session_key = ? AND NOT EXISTS (SELECT 1 FROM context WHERE session_key = ?)',
      ),
      entries: db.prepare('SELECT seq, at, message FROM context WHERE session_key = ? ORDER BY seq'),
      // The entries a revision changes: JSON1 picks them out, so the others are not parsed here.
      entriesOf: db.prepare(
        "SELECT seq, at, message FROM context WHERE session_key = ? AND json_extract(message, '$.messageId') = ? ORDER BY seq",
      ),
      dropEntry: db.prepare('DELETE FROM context WHERE seq = ?'),
      setEntry: db.prepare('UPDATE context SET message = ? WHERE seq = ?'),
      // The override, the takeover and the live revisions, oldest first, in one statement: the
      // read without the context runs for every batch nothing addresses, and three lookups took
      // 6.9 µs where the override's alone took 2.7 and this one takes 4.4 (scratch, better-sqlite3).
      extras: db
        .prepare(
          `SELECT 0, modes, NULL, NULL, NULL, 0 FROM activations WHERE session_key = @session
          UNION ALL SELECT 1, since, until, NULL, NULL, 0 FROM takeovers WHERE session_key = @session
          UNION ALL SELECT 2, kind, message_id, content, at, seq FROM revisions WHERE session_key = @session AND until > @now
          ORDER BY 1, 6`,
        )
        .raw(),
      setActivation: db.prepare(
        'INSERT INTO activations (session_key, modes) VALUES (?, ?) ON CONFLICT (session_key) DO UPDATE SET modes = excluded.modes',
      ),
      dropActivation: db.prepare('DELETE FROM activations WHERE session_key = ?'),
      expiredContext: db.prepare(
        'DELETE FROM context WHERE session_key IN (SELECT session_key FROM conversations WHERE until <= ?)',
      ),
      expired: db.prepare('DELETE FROM conversations WHERE until <= ?'),
    };
    const heads = db.prepare('SELECT session_key FROM conversations').pluck();
    this.withHead = new NamedSessions(() => heads.all() as string[]);
    const extras = db
      .prepare(
        'SELECT session_key FROM activations UNION SELECT session_key FROM takeovers UNION SELECT session_key FROM revisions',
      )
      .pluck();
    this.withExtras = new NamedSessions(() => extras.all() as string[]);
  }

  contextKept(sessionKey: string, messages: readonly ContextMessage[], now: number, keep: ContextKeep): void {
    this.withHead.add(sessionKey);
    const at = Math.floor(now);
    const head = this.heads.get(sessionKey) ?? this.headRow(sessionKey);
    let dropped = 0;
    let count = 0;
    if (head && head.until > now) ({ dropped, count } = head);
    else if (head) this.sql.forget.run(sessionKey);
    for (const message of messages) this.sql.append.run(sessionKey, at, JSON.stringify(message));
    count += messages.length;
    const excess = count - Math.max(0, keep.maxMessages);
    if (excess > 0) {
      this.sql.trim.run({ session: sessionKey, skip: excess - 1 });
      dropped += excess;
      count -= excess;
    }
    const until = Math.floor(now + keep.ttlMs);
    this.sql.save.run(sessionKey, dropped, until);
    if (this.heads.size >= MAX_HEADS) this.heads.clear();
    this.heads.set(sessionKey, { dropped, until, count });
  }

  /** A session's head as the rows have it (undefined: none). */
  private headRow(sessionKey: string): Head | undefined {
    const row = this.sql.head.get(sessionKey) as { dropped: number; until: number } | undefined;
    return row && { dropped: row.dropped, until: row.until, count: this.sql.count.get(sessionKey) as number };
  }

  /** A write rolled back: the heads it kept may not be the rows'. */
  protected conversationsRolledBack(): void {
    this.heads.clear();
  }

  contextCleared(sessionKey: string, upTo: number): void {
    this.heads.delete(sessionKey);
    this.sql.clear.run(sessionKey, upTo);
    this.sql.resetDropped.run(sessionKey);
    this.sql.dropEmpty.run(sessionKey, sessionKey);
  }

  conversation(sessionKey: string, now: number, withContext: boolean): ConversationState {
    // Without the context, neither its head nor its rows (a JSON.parse each) are read.
    const head =
      withContext && this.withHead.has(sessionKey)
        ? (this.sql.head.get(sessionKey) as { dropped: number; until: number } | undefined)
        : undefined;
    const state: ConversationState =
      head && head.until > now
        ? { context: keptMessages(this.sql.entries.all(sessionKey)), dropped: head.dropped }
        : { context: [], dropped: 0 };
    if (!this.withExtras.has(sessionKey)) return state;
    for (const row of this.sql.extras.all({ session: sessionKey, now }) as ExtraRow[]) {
      if (row[0] === 0) state.activation = JSON.parse(row[1]) as ActivationModes;
      else if (row[0] === 1) state.takeover = { since: row[1], until: row[2] };
      else {
        const revision: Revision = { kind: row[1], messageId: row[2], at: row[4] };
        if (row[3] !== null) revision.content = row[3];
        (state.revisions ??= []).push(revision);
      }
    }
    return state;
  }

  revisionKept(
    sessionKey: string,
    revision: Revision,
    now: number,
    keep: RevisionKeep,
  ): { recorded: boolean; context: boolean } {
    this.withExtras.add(sessionKey);
    if (!this.revisions.kept(sessionKey, revision, now, keep)) return { recorded: false, context: false };
    const head = this.sql.head.get(sessionKey) as { until: number } | undefined;
    if (!head || head.until <= now) return { recorded: true, context: false };
    this.heads.delete(sessionKey);
    const entries = keptMessages(this.sql.entriesOf.all(sessionKey, revision.messageId));
    const revised = revisedContext(entries, revision);
    if (revised === undefined) return { recorded: true, context: false };
    // The rule hands back the entries it keeps as they were: a row is written only where it changed.
    const after = new Map(revised.map((entry) => [entry.seq, entry]));
    for (const entry of entries) {
      const changed = after.get(entry.seq);
      if (!changed) this.sql.dropEntry.run(entry.seq);
      else if (changed !== entry) this.sql.setEntry.run(JSON.stringify(changed.message), entry.seq);
    }
    return { recorded: true, context: true };
  }

  takeoverHeld(sessionKey: string, at: number, hold: TakeoverHold, now: number): TakeoverChange {
    this.withExtras.add(sessionKey);
    return this.revisions.takeoverHeld(sessionKey, at, hold, now);
  }

  takeoverEnded(sessionKey: string, now: number, since?: number): Takeover | undefined {
    return this.revisions.takeoverEnded(sessionKey, now, since);
  }

  activationSaved(sessionKey: string, override: ActivationModes | undefined): void {
    if (override === undefined) return void this.sql.dropActivation.run(sessionKey);
    this.withExtras.add(sessionKey);
    this.sql.setActivation.run(sessionKey, JSON.stringify(override));
  }

  /** Forget conversations whose time is up (with the store's other purges). */
  purgeConversations(now: number): void {
    this.heads.clear();
    this.sql.expiredContext.run(now);
    this.sql.expired.run(now);
    this.revisions.purgeRevisions(now);
  }
}

/** A row of the `extras` read: an override, a takeover, or a revision (the last column orders them). */
type ExtraRow =
  | [0, string, null, null, null, number]
  | [1, number, number, null, null, number]
  | [2, Revision['kind'], string, string | null, number, number];

/** Context rows as the store hands them out. */
function keptMessages(rows: unknown[]): KeptMessage[] {
  return (rows as Array<{ seq: number; at: number; message: string }>).map((row): KeptMessage => ({
    seq: row.seq,
    at: row.at,
    message: JSON.parse(row.message) as ContextMessage,
  }));
}
