import type { BudgetAnswer, BudgetSpend, Budgets, LeasedBatch } from '../../core/ports/index.js';
import { clock } from './codec.js';
import type { ScriptedRedis } from './connections.js';
import { spendReply } from './replies.js';

/**
 * Budgets (§12 of the contract) on Redis: each budget a sorted set of its spends under the
 * store's one hash tag, all spent or none in one script (spend-budgets.lua), so the keys of one
 * call may belong to different sessions; a batch over its budget moves to its session's
 * deferred buffer in one script fenced as a commit (defer.lua).
 */
export class RedisBudgets implements Budgets {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
    /** Windows by the caller's `now` (`clock: 'caller'`), else by the server's clock. */
    private readonly callerClock: boolean,
  ) {}

  async spendBudgets(budgets: readonly BudgetSpend[], now: number): Promise<BudgetAnswer> {
    if (budgets.length === 0) return { ok: true };
    const args = budgets.flatMap(({ key, limit, windowMs }) => [
      key,
      Math.max(0, Math.floor(limit)),
      Math.max(0, Math.floor(windowMs)),
    ]);
    const exceeded = spendReply(await this.redis.aiSpendBudgets(this.prefix, this.serverOr(now), ...args));
    return exceeded.length === 0 ? { ok: true } : { ok: false, exceeded };
  }

  async deferBatch(batch: LeasedBatch, deferKey: string, dueAt: number, now: number): Promise<boolean> {
    const deferred = await this.redis.aiDefer(
      this.prefix,
      batch.debounceKey,
      batch.sessionKey,
      batch.fence,
      batch.parts.length,
      clock(now),
      deferKey,
      Math.floor(dueAt),
    );
    return deferred === 1;
  }

  private serverOr(now: number): string {
    return this.callerClock ? clock(now) : '';
  }
}
