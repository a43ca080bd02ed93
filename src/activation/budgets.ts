import type { Budget } from '../config/activation.js';
import type { BudgetAnswer, BudgetSpend, LeasedBatch } from '../core/ports/index.js';
import { budgetBufferKey } from '../core/ports/index.js';

/** What the budgets say of a batch about to reach the agent. */
export type BudgetVerdict =
  | { over: false }
  | { over: true; action: 'drop'; reason: string }
  | { over: true; action: 'merge'; deferKey: string; dueAt: number; reason: string };

/** The budget a batch spends from, by its rule: what it counts, and the rule itself (a changed rule counts anew). */
function spendOf(budget: Budget, batch: LeasedBatch): BudgetSpend {
  const last = batch.parts[batch.parts.length - 1]!.event;
  return {
    key: budgetKey(budget, batch.sessionKey, last.namespace, last.sender.id, last.channel),
    limit: budget.limit,
    windowMs: budget.windowMs,
  };
}

function budgetKey(budget: Budget, sessionKey: string, namespace: string, senderId: string, channel: string): string {
  const counted =
    budget.per === 'sender'
      ? `sender ${namespace}:${senderId}`
      : budget.per === 'conversation'
        ? `conversation ${sessionKey}`
        : `channel ${channel}`;
  return `${counted} (${budget.limit} per ${budget.windowMs} ms)`;
}

/** The buffers a sender's batches over a `merge` budget wait in (a recall looks there too). */
export function budgetBuffersOf(
  budgets: readonly Budget[],
  sessionKey: string,
  namespace: string,
  senderId: string,
  channel: string,
): string[] {
  return budgets
    .filter((budget) => budget.action === 'merge')
    .map((budget) => budgetBufferKey(sessionKey, budgetKey(budget, sessionKey, namespace, senderId, channel)));
}

/**
 * Spend one unit of each of a channel's budgets for a batch, all or none (contract §12). Over one
 * with `drop`, the batch is kept as context only; over only `merge` ones, it waits in its
 * session's buffer of that budget until every exceeded window allows, merged with the batches
 * that join it meanwhile.
 */
export async function spendBudgets(
  budgets: readonly Budget[],
  batch: LeasedBatch,
  now: number,
  spend: (spends: readonly BudgetSpend[], now: number) => Promise<BudgetAnswer>,
): Promise<BudgetVerdict> {
  if (budgets.length === 0) return { over: false };
  const spends = budgets.map((budget) => spendOf(budget, batch));
  const answer = await spend(spends, now);
  if (answer.ok) return { over: false };
  const exceeded = new Map(answer.exceeded.map((entry) => [entry.key, entry.retryAt]));
  const over = budgets.filter((_, i) => exceeded.has(spends[i]!.key));
  const names = answer.exceeded.map((entry) => entry.key).join(', ');
  if (over.some((budget) => budget.action === 'drop')) {
    return { over: true, action: 'drop', reason: `over budget: ${names}; kept as context` };
  }
  // The first exceeded budget in the configured order names the buffer, so the batches it holds
  // back keep joining one buffer; it is due when every exceeded window allows.
  const first = spends.find((entry) => exceeded.has(entry.key))!;
  const deferKey = budgetBufferKey(batch.sessionKey, first.key);
  const dueAt = Math.max(now, ...answer.exceeded.map((entry) => entry.retryAt));
  return {
    over: true,
    action: 'merge',
    deferKey,
    dueAt,
    reason: `over budget: ${names}; held ${Math.max(0, Math.ceil(dueAt - now))} ms, merged with the batches that follow`,
  };
}
