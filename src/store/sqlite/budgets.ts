import type Database from 'better-sqlite3';
import type { BudgetRows } from '../local/budgets.js';
import { SqliteConversations } from './conversations.js';

/**
 * Budgets (§12 of the contract) in the file: each spend a row of `budget_spends` (several at
 * one ms are several rows), forgotten once it left its key's window; the due time of each
 * buffer of deferred batches in `budget_buffers` (its parts are rows of `parts` under its key,
 * as every buffer's). Read and written by SQL alone, inside the store's current transaction.
 */
export const budgetSchema = `
CREATE TABLE IF NOT EXISTS budget_spends (key TEXT NOT NULL, at INTEGER NOT NULL, until INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS budget_spends_key ON budget_spends (key, at);
CREATE INDEX IF NOT EXISTS budget_spends_until ON budget_spends (until);
CREATE TABLE IF NOT EXISTS budget_buffers (debounce_key TEXT PRIMARY KEY, due_at INTEGER NOT NULL) WITHOUT ROWID;
`;

/** The SQLite store's budget rows (and conversation rows). */
export class SqliteBudgets extends SqliteConversations implements BudgetRows {
  private readonly budgetSql;

  constructor(db: Database.Database) {
    super(db);
    db.exec(budgetSchema);
    this.budgetSql = {
      forget: db.prepare('DELETE FROM budget_spends WHERE key = ? AND at <= ?'),
      window: db.prepare('SELECT at FROM budget_spends WHERE key = ? AND at > ? ORDER BY at').pluck(),
      spend: db.prepare('INSERT INTO budget_spends (key, at, until) VALUES (?, ?, ?)'),
      expired: db.prepare('DELETE FROM budget_spends WHERE until <= ?'),
      move: db.prepare('UPDATE parts SET debounce_key = ?, closes = 0 WHERE id = ?'),
      due: db.prepare(
        'INSERT INTO budget_buffers (debounce_key, due_at) VALUES (?, ?) ON CONFLICT (debounce_key) DO UPDATE SET due_at = excluded.due_at',
      ),
      dropDue: db.prepare('DELETE FROM budget_buffers WHERE debounce_key = ?'),
    };
  }

  budgetWindow(key: string, since: number): number[] {
    this.budgetSql.forget.run(key, since);
    return this.budgetSql.window.all(key, since) as number[];
  }

  budgetSpent(key: string, at: number, windowMs: number): void {
    this.budgetSql.spend.run(key, at, at + windowMs);
  }

  partsDeferred(ids: readonly string[], debounceKey: string, dueAt: number): void {
    for (const id of ids) this.budgetSql.move.run(debounceKey, Number(id));
    this.budgetSql.due.run(debounceKey, dueAt);
  }

  /** A buffer of deferred batches emptied: its due time goes with it. */
  deferredDropped(debounceKey: string): void {
    this.budgetSql.dropDue.run(debounceKey);
  }

  /** Spends whose every window ended (keys not spent from since). */
  purgeBudgets(now: number): void {
    this.budgetSql.expired.run(now);
  }
}
