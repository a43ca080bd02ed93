import { describe, expect, it } from 'vitest';
import { sharedLedger } from '../../src/revise/ledger.js';

describe('the ledger of emitted ids in a shared store', () => {
  it("hands them to the output's commit, in step, where the store writes values with commits", () => {
    const withCommit: unknown[] = [];
    const ledger = sharedLedger({
      sharedGet: async () => undefined,
      sharedPut: () => Promise.reject(new Error('not one SET each')),
      putWithCommit: (...args) => void withCommit.push(args),
    });
    expect(ledger.put([['k', 'v']], 1000, 5, 'o1')).toBeUndefined();
    expect(withCommit).toEqual([['o1', [['k', 'v']], 1000]]);
  });

  it('puts each one before the commit where it does not', async () => {
    const put: unknown[] = [];
    const ledger = sharedLedger({
      sharedGet: async () => undefined,
      sharedPut: async (...args) => void put.push(args),
    });
    await ledger.put(
      [
        ['k1', 'v1'],
        ['k2', 'v2'],
      ],
      1000,
      5,
      'o1',
    );
    expect(put).toEqual([
      ['k1', 'v1', 1000, 5],
      ['k2', 'v2', 1000, 5],
    ]);
  });
});
