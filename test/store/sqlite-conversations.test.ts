import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempDir } from '../support/helpers.js';

// A flush of a session with no conversation rows reads nothing from the file: the store names
// the sessions that have some. These say the names never hide a row.
describe('SQLite conversations of sessions named in memory', () => {
  const open: SqliteStore[] = [];
  const dir = tempDir();
  const sqlite = (name: string): SqliteStore => {
    const store = new SqliteStore(join(dir.path, name), { now: 0 });
    open.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close().catch(() => undefined);
  });

  it('reads a session written after an earlier read found none', async () => {
    const store = sqlite('after.db');
    expect(await store.conversation('s', 0)).toStrictEqual({ context: [], dropped: 0 });
    await store.setActivation('s', { private: 'never' }, 0);
    await store.holdTakeover('t', 1, { holdMs: 1000, maxMs: 2500 }, 1);
    await store.revise('r', ['r'], { kind: 'recall', messageId: 'a', at: 1 }, 1, { maxRevisions: 4, ttlMs: 60_000 });
    expect((await store.conversation('s', 2)).activation).toStrictEqual({ private: 'never' });
    expect((await store.conversation('t', 2)).takeover).toStrictEqual({ since: 1, until: 1001 });
    expect((await store.conversation('r', 2)).revisions).toStrictEqual([{ kind: 'recall', messageId: 'a', at: 1 }]);
    expect(await store.conversation('other', 2)).toStrictEqual({ context: [], dropped: 0 });
  });

  it('reads the sessions of a file written before it was opened again', async () => {
    const path = join(dir.path, 'reopen.db');
    const first = new SqliteStore(path, { now: 0 });
    await first.setActivation('s', { group: 'mention' }, 0);
    await first.close();
    const store = sqlite('reopen.db');
    expect((await store.conversation('s', 1)).activation).toStrictEqual({ group: 'mention' });
  });

  it('reads every session, and none of those whose rows went, once more were named than it keeps between reads of the rows', async () => {
    const store = sqlite('many.db');
    expect(await store.conversation('s0', 0)).toStrictEqual({ context: [], dropped: 0 });
    for (let i = 0; i < 3000; i++) await store.setActivation(`s${i}`, { private: 'mention' }, 0);
    for (let i = 0; i < 3000; i += 2) await store.setActivation(`s${i}`, undefined, 0);
    for (let i = 0; i < 3000; i++) {
      const { activation } = await store.conversation(`s${i}`, 1);
      expect(activation).toStrictEqual(i % 2 === 0 ? undefined : { private: 'mention' });
    }
  });
});
