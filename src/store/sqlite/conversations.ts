import type Database from 'better-sqlite3';
import type { ActivationModes, ContextKeep } from '../../core/ports/index.js';
import type { ContextMessage, ConversationState, KeptMessage } from '../../events/context.js';
import type { ConversationRows } from '../local/conversations.js';

/**
 * Conversations (§12 of the contract) in the file: each kept message a row of `context`, whose
 * AUTOINCREMENT key is its seq (never used twice, also after the newest row is deleted); a
 * session's dropped count and the time it is forgotten in `conversations`; overrides set at run
 * time in `activations`, with no expiry. Read and written by SQL alone: the rows are the truth,
 * and a write rolled back leaves nothing in memory.
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

/** The SQLite store's conversation rows; every write runs inside the store's current transaction. */
export class SqliteConversations implements ConversationRows {
  private readonly sql;

  constructor(db: Database.Database) {
    db.exec(conversationSchema);
    this.sql = {
      head: db.prepare('SELECT dropped, until FROM conversations WHERE session_key = ?'),
      append: db.prepare('INSERT INTO context (session_key, at, message) VALUES (?, ?, ?)'),
      count: db.prepare('SELECT count(*) FROM context WHERE session_key = ?').pluck(),
      trim: db.prepare(
        'DELETE FROM context WHERE seq IN (SELECT seq FROM context WHERE session_key = ? ORDER BY seq LIMIT ?)',
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
      activation: db.prepare('SELECT modes FROM activations WHERE session_key = ?').pluck(),
      setActivation: db.prepare(
        'INSERT INTO activations (session_key, modes) VALUES (?, ?) ON CONFLICT (session_key) DO UPDATE SET modes = excluded.modes',
      ),
      dropActivation: db.prepare('DELETE FROM activations WHERE session_key = ?'),
      expiredContext: db.prepare(
        'DELETE FROM context WHERE session_key IN (SELECT session_key FROM conversations WHERE until <= ?)',
      ),
      expired: db.prepare('DELETE FROM conversations WHERE until <= ?'),
    };
  }

  contextKept(sessionKey: string, messages: readonly ContextMessage[], now: number, keep: ContextKeep): void {
    const at = Math.floor(now);
    let dropped = 0;
    const head = this.sql.head.get(sessionKey) as { dropped: number; until: number } | undefined;
    if (head && head.until > now) dropped = head.dropped;
    else if (head) this.sql.forget.run(sessionKey);
    for (const message of messages) this.sql.append.run(sessionKey, at, JSON.stringify(message));
    const excess = (this.sql.count.get(sessionKey) as number) - Math.max(0, keep.maxMessages);
    if (excess > 0) {
      this.sql.trim.run(sessionKey, excess);
      dropped += excess;
    }
    this.sql.save.run(sessionKey, dropped, Math.floor(now + keep.ttlMs));
  }

  contextCleared(sessionKey: string, upTo: number): void {
    this.sql.clear.run(sessionKey, upTo);
    this.sql.resetDropped.run(sessionKey);
    this.sql.dropEmpty.run(sessionKey, sessionKey);
  }

  conversation(sessionKey: string, now: number, withContext: boolean): ConversationState {
    // Without the context, neither its head nor its rows (a JSON.parse each) are read.
    const head = withContext
      ? (this.sql.head.get(sessionKey) as { dropped: number; until: number } | undefined)
      : undefined;
    const state: ConversationState =
      head && head.until > now
        ? {
            context: (this.sql.entries.all(sessionKey) as Array<{ seq: number; at: number; message: string }>).map(
              (row): KeptMessage => ({ seq: row.seq, at: row.at, message: JSON.parse(row.message) as ContextMessage }),
            ),
            dropped: head.dropped,
          }
        : { context: [], dropped: 0 };
    const modes = this.sql.activation.get(sessionKey) as string | undefined;
    if (modes !== undefined) state.activation = JSON.parse(modes) as ActivationModes;
    return state;
  }

  activationSaved(sessionKey: string, override: ActivationModes | undefined): void {
    if (override === undefined) this.sql.dropActivation.run(sessionKey);
    else this.sql.setActivation.run(sessionKey, JSON.stringify(override));
  }

  /** Forget conversations whose time is up (with the store's other purges). */
  purgeConversations(now: number): void {
    this.sql.expiredContext.run(now);
    this.sql.expired.run(now);
  }
}
