import { describe } from 'vitest';
import { describeAdmit } from './admit.js';
import { describeBuffers } from './buffers.js';
import { describeCloseCases } from './close-cases.js';
import { describeCorrelation } from './correlation.js';
import { describeDeadlines } from './deadlines.js';
import { storeHarness, type ContractOptions, type OpenStore, type ReopenStore } from './harness.js';
import { describeLeases } from './leases.js';
import { describeOperations } from './operations.js';
import { describeOutbox } from './outbox.js';
import { describePushQueue } from './push.js';
import { describeRestart } from './restart.js';
import { describeTurnRestart, describeTurns } from './turns.js';

/**
 * The meaning every Store keeps, whatever holds its state, as vitest suites (call it at the top
 * level of a test file). `open` gives a fresh, empty store; `reopen` (durable stores) closes one
 * and opens the same state again, as a restart would: with it, the restart tests run too. A
 * shared store (Redis) runs it with `{ shared: true }` (see `ContractOptions`).
 */
export function describeStoreContract(name: string, open: OpenStore, options: ReopenStore | ContractOptions = {}): void {
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
    describeLeases(h);
    describeOperations(h);
    describeTurns(h);
    if (reopen) {
      describeRestart(h);
      describeTurnRestart(h);
    }
  });
}

/**
 * Only the rules that run on the caller's clock, case by case (the debounce close rules and the
 * named leases): for a store that keeps claim and group TTLs on a clock of its own (Redis's key
 * expiry), where the rest of the contract's times cannot be driven. Open it on the caller's
 * clock (`RedisStore.open(url, { clock: 'caller' })`).
 */
export function describeCloseRules(name: string, open: OpenStore): void {
  describe(`${name} store: debounce close rules and leases`, () => {
    const h = storeHarness(open);
    describeCloseCases(h);
    describeLeases(h);
  });
}

/**
 * The agent-turn rules alone (docs/turns.md), on the caller's clock: for Redis, as
 * `describeCloseRules`; with `reopen`, what a restart keeps of them too.
 */
export function describeTurnRules(name: string, open: OpenStore, reopen?: ReopenStore): void {
  describe(`${name} store: agent turns`, () => {
    const h = storeHarness(open, reopen);
    describeTurns(h);
    if (reopen) describeTurnRestart(h);
  });
}
