import { describe } from 'vitest';
import { describeAdmit } from './admit.js';
import { describeBuffers } from './buffers.js';
import { describeCorrelation } from './correlation.js';
import { describeDeadlines } from './deadlines.js';
import { storeHarness, type OpenStore, type ReopenStore } from './harness.js';
import { describeOperations } from './operations.js';
import { describeOutbox } from './outbox.js';
import { describePushQueue } from './push.js';
import { describeRestart } from './restart.js';

/**
 * The meaning every Store keeps, whatever holds its state, as vitest suites (call it at the top
 * level of a test file). `open` gives a fresh, empty store; `reopen` (durable stores) closes one
 * and opens the same state again, as a restart would: with it, the restart tests run too.
 */
export function describeStoreContract(name: string, open: OpenStore, reopen?: ReopenStore): void {
  describe(`${name} store contract`, () => {
    const h = storeHarness(open, reopen);
    describeAdmit(h);
    describeCorrelation(h);
    describeDeadlines(h);
    describeBuffers(h);
    describeOutbox(h);
    describePushQueue(h);
    describeOperations(h);
    if (reopen) describeRestart(h);
  });
}
