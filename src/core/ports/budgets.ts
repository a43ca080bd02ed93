import type { LeasedBatch } from './buffer-leases.js';

/** One budget to spend from: at most `limit` spends in any `windowMs` (a sliding window). */
export interface BudgetSpend {
  /** The budget's key: what it counts (`sender:qq:42`, `conversation:qq:group:1`, `channel:qq`) and its rule. */
  key: string;
  limit: number;
  windowMs: number;
}

/** What a spend did: every budget had room (one unit spent from each), or none was spent. */
export type BudgetAnswer = { ok: true } | { ok: false; exceeded: Array<{ key: string; retryAt: number }> };

/**
 * Budgets (contract §12): how many batches a sender, a conversation or a channel may have
 * emitted per window, counted in the store for the whole deployment; and the deferral of a
 * batch over its budget, merged with that budget's later batches of its session until the
 * window allows.
 */
export interface Budgets {
  /**
   * Spend one unit from each budget at `now`, all or none: when every one has had fewer than
   * `limit` spends in the `windowMs` before `now`, record the spend in each; else record none
   * and say, for each budget without room, when its oldest spend in the window leaves it
   * (`retryAt`, ms).
   */
  spendBudgets(budgets: readonly BudgetSpend[], now: number): Promise<BudgetAnswer>;
  /**
   * Defer a leased batch, in one step: its parts leave their buffer as a commit removes them
   * (the session is released, later parts re-arm the buffer) and join the session's buffer
   * `deferKey` (`budgetBufferKey`), appended after what it holds, due at `dueAt` (the later of
   * its deadline and `dueAt` when it already holds parts). That buffer is then claimed as any
   * due buffer, all its parts in one batch. A stale fence changes nothing: false.
   */
  deferBatch(batch: LeasedBatch, deferKey: string, dueAt: number, now: number): Promise<boolean>;
}
