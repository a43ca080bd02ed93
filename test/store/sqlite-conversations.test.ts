import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ContextKeep } from '../../src/core/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { contextMessage } from '../../src/testing/store/conversations.js';
import { draft, item } from '../../src/testing/index.js';
import { tempDir } from '../support/helpers.js';

/** Keep `ids` as the context of session `s`, each a batch of its own, at `now`. */
async function keepEach(store: SqliteStore, ids: readonly string[], now: number, keep: ContextKeep): Promise<void> {
  for (const id of ids) {
    await store.admit([item(id, { closeNow: true, at: now, debounceKey: id })], now);
    const [batch] = await store.claimDue(now, 1000, 1);
    expect(await store.keepContext(batch!, [contextMessage(id)], now, keep)).toBe(true);
  }
}

const ids = (state: { context: ReadonlyArray<{ message: { messageId: string } }> }): string[] =>
  state.context.map((entry) => entry.message.messageId);

// A flush of a session with no conversation rows reads nothing from the file, and a keep does
// not count its session's rows each time: the store remembers what it wrote. These say what it
// remembers never differs from the rows.
describe('SQLite conversations remembered in memory', () => {
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
    await keepEach(store, ['a'], 1, { maxMessages: 5, ttlMs: 60_000 });
    const state = await store.conversation('s', 2);
    expect([ids(state), state.activation]).toStrictEqual([['a'], { private: 'never' }]);
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

  it('trims and counts the dropped messages by the rows after a keep whose transaction failed', async () => {
    const store = sqlite('failed.db');
    const keep = { maxMessages: 3, ttlMs: 60_000 };
    await keepEach(store, ['a', 'b', 'c'], 0, keep);
    const tx = store as unknown as { groupTx: (body: () => void) => void };
    const real = tx.groupTx;
    let fail = false;
    tx.groupTx = (body) =>
      real(() => {
        body();
        if (fail) throw new Error('disk I/O error');
      });
    await store.admit([item('d', { closeNow: true, debounceKey: 'd' })], 0);
    const [batch] = await store.claimDue(0, 1000, 1);
    fail = true;
    await expect(store.keepContext(batch!, [contextMessage('d')], 0, keep)).rejects.toThrow('disk I/O error');
    fail = false;
    // The batch is still held (the session's next one waits for it): kept again, then one more.
    expect(await store.keepContext(batch!, [contextMessage('d')], 0, keep)).toBe(true);
    await keepEach(store, ['e'], 1, keep);
    const state = await store.conversation('s', 2);
    expect(ids(state)).toStrictEqual(['c', 'd', 'e']);
    expect(state.dropped).toBe(2);
  });

  it('counts again from nothing once the conversation expired, and from the rows after an output took the context', async () => {
    const store = sqlite('expired.db');
    await keepEach(store, ['a', 'b', 'c'], 0, { maxMessages: 2, ttlMs: 100 });
    expect((await store.conversation('s', 50)).dropped).toBe(1);
    await keepEach(store, ['d', 'e'], 200, { maxMessages: 2, ttlMs: 100 });
    const later = await store.conversation('s', 250);
    expect([ids(later), later.dropped]).toStrictEqual([['d', 'e'], 0]);
    await store.admit([item('x', { closeNow: true, at: 250 })], 250);
    const [batch] = await store.claimDue(250, 1000, 1);
    const upTo = later.context.at(-1)!.seq;
    await store.commit(batch!, { ...draft('o1'), contextUpTo: upTo }, 250);
    await keepEach(store, ['f', 'g', 'h'], 260, { maxMessages: 2, ttlMs: 100 });
    const after = await store.conversation('s', 270);
    expect([ids(after), after.dropped]).toStrictEqual([['g', 'h'], 1]);
  });
});
