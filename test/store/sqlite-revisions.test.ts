import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RevisionKeep } from '../../src/core/ports/index.js';
import type { Revision } from '../../src/events/context.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { contextMessage } from '../../src/testing/store/conversations.js';
import { draft, item } from '../../src/testing/index.js';
import { tempDir } from '../support/helpers.js';

const keep = (maxRevisions = 4, ttlMs = 60_000): RevisionKeep => ({ maxRevisions, ttlMs });
const recall = (messageId: string, at: number): Revision => ({ kind: 'recall', messageId, at });
const edit = (messageId: string, content: string, at: number): Revision => ({ kind: 'edit', messageId, at, content });
const hold = { holdMs: 1000, maxMs: 2500 };

describe('SQLite revisions and takeovers', () => {
  const open: SqliteStore[] = [];
  const dir = tempDir();
  const sqlite = (name: string, now = 0): SqliteStore => {
    const store = new SqliteStore(join(dir.path, name), { now });
    open.push(store);
    return store;
  };
  /** Rows of `table` in the file, read beside the running store (WAL). */
  const rows = (path: string, sql: string): unknown[] => {
    const db = new Database(path, { readonly: true });
    try {
      return db.prepare(sql).all();
    } finally {
      db.close();
    }
  };
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close().catch(() => undefined);
  });

  it('reads a session with nothing as no context and nothing dropped, without a revisions or takeover key', async () => {
    const store = sqlite('empty.db');
    expect(await store.conversation('s', 0)).toStrictEqual({ context: [], dropped: 0 });
    expect(await store.conversation('s', 0, { context: false })).toStrictEqual({ context: [], dropped: 0 });
    // Revisions whose time is up leave nothing behind either.
    await store.revise('s', ['s'], recall('a', 0), 0, keep(4, 1000));
    expect(await store.conversation('s', 1000)).toStrictEqual({ context: [], dropped: 0 });
  });

  it('reads the override, the takeover and the revisions together, with or without the context', async () => {
    const store = sqlite('together.db');
    await store.setActivation('s', { private: 'mention' }, 0);
    await store.revise('s', ['s'], edit('a', 'A', 1), 1, keep());
    await store.revise('s', ['s'], recall('b', 2), 2, keep());
    await store.holdTakeover('s', 3, hold, 3);
    const expected = {
      context: [],
      dropped: 0,
      activation: { private: 'mention' },
      revisions: [edit('a', 'A', 1), recall('b', 2)],
      takeover: { since: 3, until: 1003 },
    };
    expect(await store.conversation('s', 10)).toStrictEqual(expected);
    expect(await store.conversation('s', 10, { context: false })).toStrictEqual(expected);
  });

  it('keeps no more than maxRevisions rows of a session in the file, and one row per message', async () => {
    const path = join(dir.path, 'bounded.db');
    const store = sqlite('bounded.db');
    for (let n = 0; n < 10; n++) await store.revise('s', ['s'], edit(`m${n % 6}`, `v${n}`, n), n, keep(3));
    const sql = "SELECT message_id, content FROM revisions WHERE session_key = 's' ORDER BY seq";
    expect(rows(path, sql)).toEqual([
      { message_id: 'm1', content: 'v7' },
      { message_id: 'm2', content: 'v8' },
      { message_id: 'm3', content: 'v9' },
    ]);
  });

  it('deletes the rows of a session revised once long ago as later revisions are written', async () => {
    const path = join(dir.path, 'sweep.db');
    const store = sqlite('sweep.db');
    for (let n = 0; n < 20; n++) await store.revise(`old${n}`, [`old${n}`], recall('a', 0), 0, keep(4, 1000));
    // Long after: every write deletes a few of the expired rows, more than the one it adds.
    for (let n = 0; n < 3; n++) await store.revise('new', ['new'], recall(`b${n}`, 5000), 5000, keep(4, 1000));
    expect(rows(path, "SELECT count(*) AS n FROM revisions WHERE session_key LIKE 'old%'")).toEqual([{ n: 0 }]);
    expect(rows(path, "SELECT count(*) AS n FROM revisions WHERE session_key = 'new'")).toEqual([{ n: 3 }]);
  });

  it('purges expired revisions with the claim log, a takeover staying until it is ended', async () => {
    const path = join(dir.path, 'purge.db');
    const store = sqlite('purge.db');
    await store.revise('s', ['s'], recall('a', 0), 0, keep(4, 1000));
    await store.holdTakeover('s', 0, hold, 0);
    await store.close();
    const again = sqlite('purge.db', 5000);
    await again.close();
    expect(rows(path, 'SELECT count(*) AS n FROM revisions')).toEqual([{ n: 0 }]);
    expect(rows(path, 'SELECT session_key, since, until FROM takeovers')).toEqual([
      { session_key: 's', since: 0, until: 1000 },
    ]);
  });

  it('opens a file made before revisions and takeovers were kept, with its conversations', async () => {
    const path = join(dir.path, 'older.db');
    const first = sqlite('older.db');
    await first.admit([item('a', { closeNow: true })], 0);
    const [batch] = await first.claimDue(0, 1000, 1);
    await first.keepContext(batch!, [contextMessage('a'), contextMessage('b')], 0, { maxMessages: 5, ttlMs: 60_000 });
    await first.close();
    const db = new Database(path);
    db.exec('DROP TABLE revisions; DROP TABLE takeovers');
    db.close();
    const store = sqlite('older.db');
    expect((await store.conversation('s', 1)).context.map((entry) => entry.message.messageId)).toEqual(['a', 'b']);
    expect(await store.revise('s', ['s'], recall('a', 2), 2, keep())).toEqual({
      recorded: true,
      buffered: false,
      context: true,
    });
    await store.holdTakeover('s', 2, hold, 2);
    const state = await store.conversation('s', 3);
    expect(state.context.map((entry) => entry.message.messageId)).toEqual(['b']);
    expect(state.revisions).toEqual([recall('a', 2)]);
    expect(state.takeover).toEqual({ since: 2, until: 1002 });
  });

  it('rewrites only the context rows of the message revised', async () => {
    const path = join(dir.path, 'rewrite.db');
    const store = sqlite('rewrite.db');
    await store.admit([item('x', { closeNow: true })], 0);
    const [batch] = await store.claimDue(0, 1000, 1);
    const messages = [contextMessage('a'), contextMessage('b'), { ...contextMessage('a'), content: 'second part' }];
    await store.keepContext(batch!, messages, 0, { maxMessages: 5, ttlMs: 60_000 });
    expect((await store.revise('s', ['s'], edit('a', 'A!', 1), 1, keep())).context).toBe(true);
    const kept = rows(path, 'SELECT message FROM context ORDER BY seq').map(
      (row) => JSON.parse((row as { message: string }).message) as { messageId: string; content: string },
    );
    expect(kept.map((message) => [message.messageId, message.content])).toEqual([
      ['a', 'A!'],
      ['b', 'b'],
      ['a', 'A!'],
    ]);
  });
});

describe('SQLite revisions, restarts and failed writes', () => {
  const open: SqliteStore[] = [];
  const dir = tempDir();
  const sqlite = (name: string, now = 0): SqliteStore => {
    const store = new SqliteStore(join(dir.path, name), { now });
    open.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close().catch(() => undefined);
  });
  /** Make the next `count` transactions of `store` run their statements and then fail, as a full disk does at COMMIT. */
  const failCommits = (store: SqliteStore): { count: number } => {
    const failing = { count: 0 };
    const inner = store as unknown as { groupTx: (fn: () => void) => void };
    const real = inner.groupTx;
    inner.groupTx = (fn) =>
      real(() => {
        fn();
        if (failing.count > 0 && failing.count--) throw new Error('disk I/O error');
      });
    return failing;
  };

  it('finds a message in a buffer restored without its body, by its platform id, else its id', async () => {
    const first = sqlite('restored.db');
    const a = item('a', { debounceKey: 's/u' });
    a.part.event.platformId = 'p-a';
    await first.admit([a, item('b', { debounceKey: 's/u' })], 0);
    await first.close();
    const store = sqlite('restored.db');
    expect((await store.revise('s', ['s/u'], recall('p-a', 10), 10, keep())).buffered).toBe(true);
    expect((await store.revise('s', ['s/u'], recall('b', 10), 10, keep())).buffered).toBe(true);
    expect((await store.revise('s', ['s/u'], recall('zzz', 10), 10, keep())).buffered).toBe(false);
    expect(await store.openBuffers()).toBe(1);
  });

  it('ends the flush lease of a batch of restored parts taken after a restart', async () => {
    const first = sqlite('restored-lease.db');
    await first.admit([item('a'), item('b')], 0);
    await first.close();
    const store = sqlite('restored-lease.db', 1000);
    const [batch] = await store.claimDue(1000, 10_000, 10);
    expect((await store.revise('s', ['s'], edit('b', 'B', 1100), 1100, keep())).buffered).toBe(true);
    expect(await store.renewLease(batch!, 1100, 10_000)).toBe(false);
    expect(await store.commit(batch!, draft('out'), 1100)).toBeUndefined();
    const [again] = await store.claimDue(1100, 10_000, 10);
    expect(again?.parts.map((p) => p.event.text)).toEqual(['a', 'b']);
    expect(await store.commit(again!, draft('out'), 1100)).toMatchObject({ id: 'out' });
  });

  it('leaves the flush lease as it was when the revision is rolled back: that flush still commits', async () => {
    const store = sqlite('revise-fails.db');
    const failing = failCommits(store);
    await store.admit([item('a')], 0);
    const [batch] = await store.claimDue(1000, 10_000, 10);
    failing.count = 2; // the group, then the revision tried on its own
    await expect(store.revise('s', ['s'], recall('a', 1100), 1100, keep())).rejects.toThrow('disk I/O error');
    expect((await store.conversation('s', 1100)).revisions).toBeUndefined();
    expect(await store.renewLease(batch!, 1100, 10_000)).toBe(true);
    expect(await store.commit(batch!, draft('out'), 1100)).toMatchObject({ id: 'out' });
    expect(await store.openBuffers()).toBe(0);
  });

  it('ends the flush lease when the revision shared a group that rolled back and then went through alone', async () => {
    const store = sqlite('revise-group.db');
    const failing = failCommits(store);
    await store.admit([item('a')], 0);
    const [batch] = await store.claimDue(1000, 10_000, 10);
    failing.count = 1; // the group only
    const [revised] = await Promise.all([
      store.revise('s', ['s'], recall('a', 1100), 1100, keep()),
      store.setActivation('t', { private: 'mention' }, 1100),
    ]);
    expect(revised.buffered).toBe(true);
    expect((await store.conversation('t', 1100)).activation).toEqual({ private: 'mention' });
    expect(await store.renewLease(batch!, 1100, 10_000)).toBe(false);
    const [again] = await store.claimDue(1100, 10_000, 10);
    expect(again?.fence).not.toBe(batch!.fence);
    expect(again?.parts.map((p) => p.event.text)).toEqual(['a']);
  });
});
