import type { BudgetAnswer, BudgetSpend } from '../../core/ports/index.js';
import { ConversationTable } from './conversations.js';

/**
 * Where a store owned by one process keeps its budgets (§12 of the contract): the times of
 * each budget's spends in its window (memory: the table below; SQLite: a table), and the due
 * time of each buffer of deferred batches. Each method runs inside the write of its step.
 */
export interface BudgetRows {
  /** The times of the spends of `key` after `since`, oldest first; those up to `since` are forgotten. */
  budgetWindow(key: string, since: number): number[];
  /** One spend of `key` at `at`, counted until `at + windowMs`. */
  budgetSpent(key: string, at: number, windowMs: number): void;
  /** Parts moved to the buffer `debounceKey` of deferred batches, due at `dueAt`. */
  partsDeferred(ids: readonly string[], debounceKey: string, dueAt: number): void;
}

/**
 * Spend one unit from each budget at `now`, all or none (see `Budgets.spendBudgets`). A spend
 * at `t` counts in the windows that end after `t` and up to `t + windowMs`: a budget of
 * `limit` allows exactly `limit` spends in any window. A key given twice is one budget (its first).
 */
export function spendBudgets(rows: BudgetRows, budgets: readonly BudgetSpend[], now: number): BudgetAnswer {
  const distinct: BudgetSpend[] = [];
  const seen = new Set<string>();
  for (const budget of budgets) {
    if (seen.has(budget.key)) continue;
    seen.add(budget.key);
    distinct.push(budget);
  }
  const exceeded: Array<{ key: string; retryAt: number }> = [];
  for (const { key, limit, windowMs } of distinct) {
    const times = rows.budgetWindow(key, now - windowMs);
    if (times.length < limit) continue;
    // Room comes back when all but limit - 1 of these spends have left the window.
    const leaving = limit > 0 ? times[times.length - limit] : undefined;
    exceeded.push({ key, retryAt: (leaving ?? now) + windowMs });
  }
  if (exceeded.length > 0) return { ok: false, exceeded };
  for (const { key, windowMs } of distinct) rows.budgetSpent(key, now, windowMs);
  return { ok: true };
}

/** The memory store's budgets (and conversations), in this process only. */
export class MemoryBudgets extends ConversationTable implements BudgetRows {
  /** By last spend, oldest first (a spend moves its key to the end): the sweep reads from the front. */
  private readonly spends = new Map<string, { times: number[]; until: number }>();

  budgetWindow(key: string, since: number): number[] {
    const spent = this.spends.get(key);
    if (!spent) return [];
    let gone = 0;
    while (gone < spent.times.length && (spent.times[gone] as number) <= since) gone++;
    if (gone > 0) spent.times.splice(0, gone);
    return spent.times;
  }

  budgetSpent(key: string, at: number, windowMs: number): void {
    const spent = this.spends.get(key) ?? { times: [], until: 0 };
    this.spends.delete(key);
    spent.times.push(at);
    spent.until = Math.max(spent.until, at + windowMs);
    this.spends.set(key, spent);
    // Forget keys whose every spend left its window, oldest spend first (stops at the first still counted).
    for (const [old, entry] of this.spends) {
      if (entry.until > at) break;
      this.spends.delete(old);
    }
  }

  /** A part's buffer lives in the store's state (see `OpenBuffer.deferred`): nothing to write. */
  partsDeferred(): void {}
}
