import { describe } from 'vitest';
import { describeAdmit } from './admit.js';
import { describeBudgetRestart, describeBudgets } from './budgets.js';
import { describeBuffers } from './buffers.js';
import { describeClaimRestart, describeClaims } from './claims.js';
import { describeCloseCases } from './close-cases.js';
import { describeConversationRestart, describeConversations } from './conversations.js';
import { describeCorrelation } from './correlation.js';
import { describeDeadlines } from './deadlines.js';
import { storeHarness, type ContractOptions, type OpenStore, type ReopenStore } from './harness.js';
import { describeLeases } from './leases.js';
import { describeOperations } from './operations.js';
import { describeOutbox } from './outbox.js';
import { describePushQueue } from './push.js';
import { describeRestart } from './restart.js';
import { describeRevisionRestart, describeRevisions, describeTakeovers } from './revisions.js';
import { describeTurnRestart, describeTurns } from './turns.js';
import { describeTyping } from './typing.js';

/**
 * The meaning every Store keeps, whatever holds its state, as vitest suites (call it at the top
 * level of a test file). `open` gives a fresh, empty store; `reopen` (durable stores) closes one
 * and opens the same state again, as a restart would: with it, the restart tests run too. A
 * shared store (Redis) runs it with `{ shared: true }` (see `ContractOptions`).
 */
export function describeStoreContract(
  name: string,
  open: OpenStore,
  options: ReopenStore | ContractOptions = {},
): void {
  const { reopen, shared, sharded } = typeof options === 'function' ? { reopen: options } : options;
  describe(`${name} store contract`, () => {
    const h = storeHarness(open, reopen, shared ?? false, sharded);
    describeAdmit(h);
    describeCorrelation(h);
    describeDeadlines(h);
    describeCloseCases(h);
    describeBuffers(h);
    describeOutbox(h);
    describePushQueue(h);
    describeClaims(h);
    describeLeases(h);
    describeOperations(h);
    describeTurns(h);
    describeConversations(h);
    describeBudgets(h);
    describeTyping(h);
    describeRevisions(h);
    describeTakeovers(h);
    if (reopen) {
      describeRestart(h);
      describeClaimRestart(h);
      describeTurnRestart(h);
      describeConversationRestart(h);
      describeBudgetRestart(h);
      describeRevisionRestart(h);
    }
  });
}

/**
 * Only the debounce close rules, case by case, and the named leases: for a store whose other
 * times the contract cannot drive (both Redis stores run the whole contract, on the caller's
 * clock, with `{ shared: true }`).
 */
export function describeCloseRules(name: string, open: OpenStore): void {
  describe(`${name} store: debounce close rules and leases`, () => {
    const h = storeHarness(open);
    describeCloseCases(h);
    describeLeases(h);
  });
}

/**
 * The agent-turn rules alone (docs/turns.md), on the caller's clock, as `describeCloseRules`;
 * with `reopen`, what a restart keeps of them too.
 */
export function describeTurnRules(name: string, open: OpenStore, reopen?: ReopenStore): void {
  describe(`${name} store: agent turns`, () => {
    const h = storeHarness(open, reopen);
    describeTurns(h);
    if (reopen) describeTurnRestart(h);
  });
}
