import type Database from 'better-sqlite3';
import type { RevisionKeep, TakeoverChange, TakeoverHold } from '../../core/ports/index.js';
import type { Revision, Takeover } from '../../events/context.js';
import { heldTakeover } from '../rules/revise.js';

/**
 * Second thoughts (contract §13) in the file: each revision kept a row of `revisions`, in the
 * order it was recorded (`seq`: a new row takes a rowid above every row there, so a session's
 * rows read by seq are oldest first), live until `until` (its `at` + ttlMs); a session's
 * takeover a row of `takeovers`, kept until it is ended. Both tables are created at open when
 * missing, so a file made before them gets them as the conversation tables came.
 */
export const revisionSchema = `
CREATE TABLE IF NOT EXISTS revisions (
  seq INTEGER PRIMARY KEY, session_key TEXT NOT NULL, message_id TEXT NOT NULL, kind TEXT NOT NULL, content TEXT,
  at INTEGER NOT NULL, until INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS revisions_session ON revisions (session_key, seq);
-- The sweep of expired revisions reads from the oldest expiry: a session revised once, long
-- ago, is found there without a scan of the table.
CREATE INDEX IF NOT EXISTS revisions_until ON revisions (until);
CREATE TABLE IF NOT EXISTS takeovers (session_key TEXT PRIMARY KEY, since INTEGER NOT NULL, until INTEGER NOT NULL) WITHOUT ROWID;
`;

/**
 * Expired revisions deleted by each revision recorded: more than the one row it adds, so the
 * table shrinks back to the live rows while revisions come, each write deleting a bounded few
 * (the store's purge with the claim log deletes the rest).
 */
const SWEEP_PER_WRITE = 8;

/**
 * The SQLite store's revision and takeover writes, inside the store's current transaction
 * (`SqliteConversations.conversation` reads them with the session's override).
 */
export class SqliteRevisions {
  private readonly sql;

  constructor(db: Database.Database) {
    db.exec(revisionSchema);
    this.sql = {
      dropExpired: db.prepare('DELETE FROM revisions WHERE session_key = ? AND until <= ?'),
      recalled: db
        .prepare("SELECT 1 FROM revisions WHERE session_key = ? AND message_id = ? AND kind = 'recall'")
        .pluck(),
      dropMessage: db.prepare('DELETE FROM revisions WHERE session_key = ? AND message_id = ?'),
      add: db.prepare(
        'INSERT INTO revisions (session_key, message_id, kind, content, at, until) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      trim: db.prepare(
        `DELETE FROM revisions WHERE session_key = ?
        AND seq NOT IN (SELECT seq FROM revisions WHERE session_key = ? ORDER BY seq DESC LIMIT ?)`,
      ),
      sweep: db.prepare(
        'DELETE FROM revisions WHERE seq IN (SELECT seq FROM revisions WHERE until <= ? ORDER BY until LIMIT ?)',
      ),
      expired: db.prepare('DELETE FROM revisions WHERE until <= ?'),
      takeover: db.prepare('SELECT since, until FROM takeovers WHERE session_key = ?'),
      saveTakeover: db.prepare(
        `INSERT INTO takeovers (session_key, since, until) VALUES (?, ?, ?)
        ON CONFLICT (session_key) DO UPDATE SET since = excluded.since, until = excluded.until`,
      ),
      dropTakeover: db.prepare('DELETE FROM takeovers WHERE session_key = ?'),
    };
  }

  /**
   * Keep a revision (see `Conversations.revise`): false, and nothing written, when its message
   * was recalled already. An edit replaces the earlier revision of its message; the session
   * keeps its newest `maxRevisions`.
   */
  kept(sessionKey: string, revision: Revision, now: number, keep: RevisionKeep): boolean {
    this.sql.dropExpired.run(sessionKey, now);
    if (this.sql.recalled.get(sessionKey, revision.messageId) !== undefined) return false;
    this.sql.dropMessage.run(sessionKey, revision.messageId);
    this.sql.add.run(
      sessionKey,
      revision.messageId,
      revision.kind,
      revision.content ?? null,
      revision.at,
      revision.at + keep.ttlMs,
    );
    this.sql.trim.run(sessionKey, sessionKey, Math.max(1, keep.maxRevisions));
    this.sql.sweep.run(now, SWEEP_PER_WRITE);
    return true;
  }

  takeover(sessionKey: string): Takeover | undefined {
    return (this.sql.takeover.get(sessionKey) as Takeover | undefined) ?? undefined;
  }

  takeoverHeld(sessionKey: string, at: number, hold: TakeoverHold, now: number): TakeoverChange {
    const current = this.takeover(sessionKey);
    const change = heldTakeover(current, at, hold, now);
    const { since, until } = change.takeover;
    // An extension that moves nothing (an earlier message, or one past maxMs) writes nothing.
    if (current?.since !== since || current.until !== until) this.sql.saveTakeover.run(sessionKey, since, until);
    return change;
  }

  takeoverEnded(sessionKey: string, now: number, since?: number): Takeover | undefined {
    const takeover = this.takeover(sessionKey);
    if (!takeover || (since !== undefined && (takeover.since !== since || takeover.until > now))) return undefined;
    this.sql.dropTakeover.run(sessionKey);
    return takeover;
  }

  /** Forget every revision whose time is up (with the store's other purges). */
  purgeRevisions(now: number): void {
    this.sql.expired.run(now);
  }
}
