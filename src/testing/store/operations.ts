import { describe, expect, it } from 'vitest';
import { type StoreHarness } from './harness.js';

/** The store as a running thing: readiness until close. */
export function describeOperations(h: StoreHarness): void {
  describe('operations', () => {
    it('answers ping while open and refuses after close', async () => {
      const store = await h.open();
      await store.ping();
      await store.close();
      await expect(store.ping()).rejects.toThrow();
    });
  });
}
