import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeliveryState } from '../../src/core/ports/index.js';
import { openStore } from '../../src/store/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import type { Store } from '../../src/core/ports/index.js';
import { tempDir } from '../support/helpers.js';
import { arrive, claim, describeStoreContract, draft, item, verdicts } from '../../src/testing/index.js';

describeStoreContract('memory', async () => new MemoryStore());

describeStoreContract(
  'sqlite',
  async () => new SqliteStore(join(tempDir().path, 'store.db'), { now: 0 }),
  async (store) => {
    await store.close();
    return new SqliteStore((store as SqliteStore).path, { now: 0 });
  },
);

describe('sqlite store', () => {
  const open: SqliteStore[] = [];
  const sqlite = (path: string, now = 0): SqliteStore => {
    const store = new SqliteStore(path, { now });
    open.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close().catch(() => undefined);
  });

  it('refuses a second store on the same file, naming the file', () => {
    const path = join(tempDir().path, 'owned.db');
    sqlite(path);
    expect(() => sqlite(path)).toThrow(`SQLite store "${path}" is in use by another instance`);
  });

  it('refuses a second process on the same file, and lets a reader read it', () => {
    const path = join(tempDir().path, 'owned.db');
    sqlite(path);
    // Another process taking ownership the way the store does is refused; a plain read works
    // (an operator's sqlite3 while the service runs).
    const script = `const D = require('better-sqlite3');
      const owner = new D(${JSON.stringify(`${path}.owner`)}, { timeout: 100 }); owner.pragma('locking_mode = EXCLUSIVE');
      try { owner.exec('BEGIN IMMEDIATE; COMMIT'); console.log('owned'); } catch (e) { console.log(e.code); }
      const db = new D(${JSON.stringify(path)}, { readonly: true, timeout: 100 });
      console.log(db.prepare('SELECT count(*) FROM outbox').pluck().get());`;
    const out = execFileSync(process.execPath, ['-e', script], { cwd: process.cwd(), encoding: 'utf8' })
      .trim()
      .split('\n');
    expect(out[0]).toMatch(/^SQLITE_BUSY/);
    expect(out[1]).toBe('0');
  });

  it('opens the file again once its owner closed it', async () => {
    const path = join(tempDir().path, 'owned.db');
    await sqlite(path).close();
    await sqlite(path).ping();
  });

  it('fails writes and ping once its file was deleted', async () => {
    const path = join(tempDir().path, 'gone.db');
    const store = sqlite(path);
    expect(verdicts(await store.admit([item('1')], 0))).toEqual(['accepted']);
    unlinkSync(path);
    await expect(store.ping()).rejects.toThrow(
      `SQLite store file "${path}" was deleted or replaced while the service ran; restart the service`,
    );
    await expect(store.admit([item('2')], 1000)).rejects.toThrow('deleted or replaced');
  });

  it("notices a file replaced under it within a second of the callers' clock", async () => {
    const path = join(tempDir().path, 'swapped.db');
    const store = sqlite(path);
    await store.admit([item('1')], 0);
    renameSync(path, `${path}.old`);
    writeFileSync(path, '');
    // Checked at most once a second: a write 999 ms after the last check still goes through.
    await store.admit([item('2')], 999);
    await expect(store.admit([item('3')], 1000)).rejects.toThrow('deleted or replaced');
  });

  it("commits a delivery's admit ahead of a flush commit requested in the same turn", async () => {
    const store = sqlite(join(tempDir().path, 'order.db'));
    await store.admit([item('a', { sessionKey: 'a' })], 0);
    const [batch] = await store.claimDue(Infinity, 30_000, 1);
    const order: string[] = [];
    // The flush commit is asked for first; the delivery waiting for its answer still goes first.
    const committed = store.commit(batch!, draft('out-a'), 10).then(() => order.push('commit'));
    const admitted = store.admit([item('b', { sessionKey: 'b' })], 10).then(() => order.push('admit'));
    await Promise.all([committed, admitted]);
    expect(order).toEqual(['admit', 'commit']);
    expect((await store.outboxAfter(0, 10)).map((record) => record.id)).toEqual(['out-a']);
    expect(await store.openBuffers()).toBe(1);
  });

  it('holds a flush commit back one turn at most, however many deliveries keep coming', async () => {
    const store = sqlite(join(tempDir().path, 'starve.db'));
    await store.admit([item('a', { sessionKey: 'a' })], 0);
    const [batch] = await store.claimDue(Infinity, 30_000, 1);
    const order: string[] = [];
    const committed = store.commit(batch!, draft('out-a'), 10).then(() => order.push('commit'));
    // A delivery in every turn from now on: the commit must not wait for a quiet turn.
    const admitted: Array<Promise<unknown>> = [];
    for (let turn = 0; turn < 6; turn++) {
      admitted.push(
        store.admit([item(`m${turn}`, { sessionKey: `t${turn}` })], 10).then(() => order.push(`admit${turn}`)),
      );
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all([committed, ...admitted]);
    expect(order.indexOf('commit')).toBeLessThanOrEqual(2);
    expect(order.indexOf('commit')).toBeGreaterThan(order.indexOf('admit0'));
  });

  it('bounds the claim log by maxKeys as well as by time', async () => {
    const path = join(tempDir().path, 'claims.db');
    const store = sqlite(path);
    const keys = Array.from({ length: 5000 }, (_, i) => `k${i}`);
    for (let i = 0; i < keys.length; i += 500) {
      await store.admit(
        keys.slice(i, i + 500).map((key) => ({ ...item(key), claims: [claim(key, 3_600_000, 100)] })),
        i,
      );
    }
    await store.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM claim_log').pluck().get()).toBe(100);
    db.close();
    const again = sqlite(path, 6000);
    const verdictOf = async (key: string) =>
      (await again.admit([{ ...item(key), claims: [claim(key, 3_600_000, 100)] }], 6000))[0]?.verdict;
    expect(await verdictOf('k4999')).toBe('claimed');
    expect(await verdictOf('k4899')).toBe('accepted');
  });

  it('purges the claim log while it runs, every 512 claims: a purge is a short delete on the event loop', async () => {
    const path = join(tempDir().path, 'running.db');
    const store = sqlite(path);
    for (let i = 0; i < 1500; i += 100) {
      await store.admit(
        Array.from({ length: 100 }, (_, j) => `r${i + j}`).map((key) => ({
          ...item(key),
          claims: [claim(key, 3_600_000, 100)],
        })),
        i,
      );
    }
    // Read beside the running store (WAL): the newest 100 keys, plus fewer than 512 since the last purge.
    const db = new Database(path, { readonly: true });
    const rows = db.prepare('SELECT count(*) FROM claim_log').pluck().get() as number;
    db.close();
    expect(rows).toBeGreaterThanOrEqual(100);
    expect(rows).toBeLessThan(100 + 512);
    await store.close();
  });

  it('purges the expired claims of a space this run never claimed in, and keeps the live ones', async () => {
    const path = join(tempDir().path, 'spaces.db');
    const first = sqlite(path);
    await first.admit([{ ...item('old'), claims: [claim('old', 1_000, 100, 'id:gone')] }], 0);
    await first.admit([{ ...item('kept'), claims: [claim('kept', 3_600_000, 100, 'id:gone')] }], 0);
    await first.close();
    // At 5 s the first claim has expired; this run claims only in another space.
    const second = sqlite(path, 5_000);
    await second.admit([{ ...item('new'), claims: [claim('new', 3_600_000, 100)] }], 5_000);
    expect(
      (await second.admit([{ ...item('kept'), claims: [claim('kept', 3_600_000, 100, 'id:gone')] }], 5_000))[0]
        ?.verdict,
    ).toBe('claimed');
    await second.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT key FROM claim_log ORDER BY rowid').pluck().all()).toEqual(['kept', 'new']);
    expect(
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'claim_log'").pluck().all(),
    ).toEqual(['claim_log_space_expiry']);
    db.close();
  });

  it("drops the claim log's two old indexes from a file made by an earlier version, keeping its claims", async () => {
    const path = join(tempDir().path, 'old-indexes.db');
    const db = new Database(path);
    db.exec(`CREATE TABLE claim_log (key TEXT NOT NULL, space TEXT NOT NULL, ttl_ms INTEGER NOT NULL, max_keys INTEGER NOT NULL, expires_at INTEGER NOT NULL);
      CREATE INDEX claim_log_expiry ON claim_log (expires_at); CREATE INDEX claim_log_space ON claim_log (space);
      INSERT INTO claim_log VALUES ('old', 'id:c', 3600000, 100, 3600000);`);
    db.close();
    const store = sqlite(path);
    expect((await store.admit([{ ...item('old'), claims: [claim('old', 3_600_000, 100)] }], 10))[0]?.verdict).toBe(
      'claimed',
    );
    await store.close();
    const after = new Database(path, { readonly: true });
    expect(
      after.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'claim_log'").pluck().all(),
    ).toEqual(['claim_log_space_expiry']);
    after.close();
  });

  it('numbers parts above the sequence of a file made when the part table had AUTOINCREMENT', async () => {
    const path = join(tempDir().path, 'autoincrement.db');
    const db = new Database(path);
    db.exec(`CREATE TABLE parts (id INTEGER PRIMARY KEY AUTOINCREMENT, debounce_key TEXT NOT NULL, received_at INTEGER NOT NULL,
      unit TEXT, closes INTEGER NOT NULL, body TEXT NOT NULL, session_key TEXT NOT NULL DEFAULT '', window_ms INTEGER NOT NULL DEFAULT 0,
      max_wait_ms INTEGER NOT NULL DEFAULT 0, max_messages INTEGER NOT NULL DEFAULT 1)`);
    // Parts up to 500 were admitted and flushed: the table is empty, its sequence is not.
    db.exec("INSERT INTO sqlite_sequence (name, seq) VALUES ('parts', 500)");
    db.close();
    const store = sqlite(path);
    const [verdict] = await store.admit([item('a')], 0);
    expect(verdict).toMatchObject({ verdict: 'accepted', partId: '501' });
  });

  it('keeps the newest maxKeys claims of a space when their expiries tie, by insertion', async () => {
    const path = join(tempDir().path, 'ties.db');
    const store = sqlite(path);
    // One admission: 300 claims with one expiry.
    await store.admit(
      Array.from({ length: 300 }, (_, i) => ({ ...item(`t${i}`), claims: [claim(`t${i}`, 3_600_000, 100)] })),
      0,
    );
    await store.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT key FROM claim_log ORDER BY rowid').pluck().all()).toEqual(
      Array.from({ length: 100 }, (_, i) => `t${200 + i}`),
    );
    db.close();
  });

  it("starts without reading the buffered parts' bodies", async () => {
    const path = join(tempDir().path, 'lazy.db');
    const store = sqlite(path);
    await store.admit([item('1'), item('2', { sessionKey: 't' })], 0);
    await store.close();
    const db = new Database(path);
    db.prepare("UPDATE parts SET body = '{not json' WHERE id = 1").run();
    db.close();
    const again = sqlite(path);
    expect(await again.openBuffers()).toBe(2);
    expect(await again.nextDeadline()).toBe(1000);
    // The body is read when the buffer is taken, not before.
    await expect(again.claimDue(1000, 100, 10)).rejects.toThrow(SyntaxError);
  });

  it('fails only the write that fails when writes share a commit, and commits each batch once', async () => {
    const store = sqlite(join(tempDir().path, 'group.db'));
    await store.admit(
      [item('a', { sessionKey: 'a', closeNow: true }), item('b', { sessionKey: 'b', closeNow: true })],
      0,
    );
    const [a, b] = await store.claimDue(0, 1000, 10);
    const results = await Promise.allSettled([
      store.commit(a as NonNullable<typeof a>, draft('same'), 1),
      store.commit(b as NonNullable<typeof b>, draft('same'), 1), // the same outbox id: one of the two is refused
      store.admit([item('c', { claims: ['z'] })], 1),
    ]);
    // The admission sharing the commit went through; the outbox holds 'same' once, from the
    // first commit: its lease, ended by the group rolled back, was held again for its retry.
    expect(results[2]?.status).toBe('fulfilled');
    expect(results[0]).toMatchObject({ status: 'fulfilled', value: { id: 'same' } });
    expect(results[1]?.status).toBe('rejected');
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['same']);
    // The refused batch is still in the store: given back as its flush does, it commits once.
    await store.release(b as NonNullable<typeof b>, 2);
    const [again] = await store.claimDue(2, 1000, 10);
    expect(again?.parts.map((p) => p.event.text)).toEqual(['b']);
    expect(await store.commit(again as NonNullable<typeof again>, draft('other'), 2)).toMatchObject({ id: 'other' });
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['same', 'other']);
    expect(await store.openBuffers()).toBe(1);
  });

  it("keeps a batch ahead of its session's later batches when its commit shared a group that rolled back", async () => {
    const store = sqlite(join(tempDir().path, 'ended-lease.db'));
    await store.admit(
      [item('a1', { debounceKey: 's/a', at: 0 }), item('z1', { sessionKey: 'z', closeNow: true, at: 0 })],
      0,
    );
    const taken = await store.claimDue(1000, 1000, 10);
    const [a, z] = ['s/a', 'z'].map((key) => taken.find((t) => t.debounceKey === key));
    // During a's flush: alice writes again (a's own deadline moves past b's), and bob sends a command.
    await store.admit(
      [item('a2', { debounceKey: 's/a', at: 1001 }), item('/b1', { debounceKey: 's/b', closeNow: true, at: 1002 })],
      1002,
    );
    // a's commit and another sharing its group, which fails it (one outbox id twice).
    const results = await Promise.allSettled([
      store.commit(a as NonNullable<typeof a>, draft('same'), 1003),
      store.commit(z as NonNullable<typeof z>, draft('same'), 1003),
    ]);
    // a's commit, tried again on its own, still held its batch: a1 is out before bob's command.
    expect(results[0]).toMatchObject({ status: 'fulfilled', value: { id: 'same', messageIds: ['same'] } });
    expect((await store.claimDue(1003, 1000, 10)).map((t) => t.parts.map((p) => p.event.text))).toEqual([['/b1']]);
  });

  it("keeps a batch's lease when its commit, tried again on its own, fails too at COMMIT", async () => {
    const store = sqlite(join(tempDir().path, 'commit-fails.db'));
    // The next two transactions run their statements and then fail, as a full disk does at COMMIT.
    const inner = store as unknown as { groupTx: (fn: () => void) => void };
    const real = inner.groupTx;
    let failures = 0;
    inner.groupTx = (fn) =>
      real(() => {
        fn();
        if (failures > 0 && failures--) throw new Error('disk I/O error');
      });
    await store.admit([item('a1', { debounceKey: 's/a', at: 0 })], 0);
    const [a] = await store.claimDue(1000, 1000, 10);
    await store.admit([item('/b1', { debounceKey: 's/b', closeNow: true, at: 1001 })], 1001);
    failures = 2;
    await expect(store.commit(a as NonNullable<typeof a>, draft('a'), 1002)).rejects.toThrow('disk I/O error');
    // The flush gives its batch back, as after any failed commit; bob's command waits behind it.
    await store.release(a as NonNullable<typeof a>, 2000);
    expect(await store.claimDue(1500, 1000, 10)).toEqual([]);
    const [again] = await store.claimDue(2000, 1000, 10);
    expect(again?.parts.map((p) => p.event.text)).toEqual(['a1']);
    await store.commit(again as NonNullable<typeof again>, draft('a'), 2001);
    expect((await store.claimDue(2002, 1000, 10)).map((t) => t.parts.map((p) => p.event.text))).toEqual([['/b1']]);
  });

  it("keeps a batch closed by a command ahead of its session's later buffers across a restart", async () => {
    const path = join(tempDir().path, 'restart-order.db');
    const first = new SqliteStore(path, { now: 0 });
    await first.admit(
      [item('/a1', { debounceKey: 's/a', closeNow: true, at: 0 }), item('b1', { debounceKey: 's/b', at: 0 })],
      0,
    );
    expect((await first.claimDue(1000, 1000, 10)).map((t) => t.debounceKey)).toEqual(['s/a']);
    await first.close(); // stopped before a's flush committed
    const again = new SqliteStore(path, { now: 2000 });
    expect((await again.claimDue(2000, 1000, 10)).map((t) => t.debounceKey)).toEqual(['s/a']);
    await again.close();
  });

  it('trims a long outbox a chunk at a time, with the event loop answering between chunks', async () => {
    const store = sqlite(join(tempDir().path, 'trim.db'));
    for (let i = 0; i < 300; i++) {
      await store.admit([item(`t${i}`, { sessionKey: `batch:t${i}`, closeNow: true })], 0);
      const [batch] = await store.claimDue(0, 100, 1);
      await store.commit(batch as NonNullable<typeof batch>, draft(`t${i}`), 0);
    }
    // A read on every turn while the trim runs: what it sees shrinks by one chunk at most.
    const sizes: number[] = [];
    let done = false;
    const trimmed = store.trimOutbox(0, 10, Number.MAX_SAFE_INTEGER).finally(() => {
      done = true;
    });
    while (!done) {
      sizes.push((await store.outboxAfter(0, 1000)).length);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await trimmed).toBe(290);
    const left = await store.outboxAfter(0, 1000);
    sizes.push(left.length);
    expect(left.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => `t${290 + i}`));
    const drops = sizes.slice(1).map((size, i) => (sizes[i] as number) - size);
    expect(Math.max(...drops)).toBeLessThanOrEqual(128);
    expect(sizes.some((size) => size > 10 && size < 300)).toBe(true);
  });

  it("keeps a failed flush's retry time and its session's hold through the rebuild after a failed group commit", async () => {
    const store = sqlite(join(tempDir().path, 'retry-hold.db'));
    // Session s: sender a's batch is taken and its flush fails; it is due again at 10 s.
    await store.admit([item('a1', { debounceKey: 's/a', closeNow: true })], 0);
    const [a] = await store.claimDue(0, 1000, 10);
    await store.release(a as NonNullable<typeof a>, 10_000);
    // Sender b's later batch of the same session waits behind it.
    await store.admit(
      [
        item('b1', { debounceKey: 's/b', closeNow: true }),
        item('x', { sessionKey: 'x', closeNow: true }),
        item('y', { sessionKey: 'y', closeNow: true }),
      ],
      1,
    );
    const taken = await store.claimDue(1, 1000, 10);
    expect(taken.map((t) => t.sessionKey)).toEqual(['x', 'y']);
    // Two commits of one outbox id in one group: the group fails and the indexes are rebuilt.
    await Promise.allSettled(taken.map((t) => store.commit(t, draft('same'), 2)));
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['same']);
    // Before a's retry time nothing of session s is due; the batch whose commit was refused is
    // (its lease was in the failed group).
    const early = await store.claimDue(5000, 1000, 10);
    expect(early).toHaveLength(1);
    expect(['x', 'y']).toContain(early[0]?.sessionKey);
    // At it, a's batch comes (beside the refused batch again, its lease run out), and b's only
    // after a's commit.
    const due = (await store.claimDue(10_000, 1000, 10)).filter((t) => t.sessionKey === 's');
    expect(due.map((t) => t.parts.map((p) => p.event.text))).toEqual([['a1']]);
    await store.commit(due[0] as NonNullable<(typeof due)[0]>, draft('a'), 10_001);
    const [next] = await store.claimDue(10_001, 1000, 10);
    expect(next?.parts.map((p) => p.event.text)).toEqual(['b1']);
    await store.close();
  });
});

describe('outbox trim, memory and SQLite alike', () => {
  const stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close().catch(() => undefined);
  });
  const each = [
    ['memory', () => new MemoryStore()],
    ['sqlite', () => new SqliteStore(join(tempDir().path, 'trim.db'), { now: 0 })],
  ] as const;
  const filled = async (open: () => Store, records: ReadonlyArray<[string, DeliveryState, number]>): Promise<Store> => {
    const store = open();
    stores.push(store);
    for (const [id, state, createdAt] of records) {
      await store.admit([item(id, { sessionKey: `batch:${id}`, closeNow: true })], 0);
      const [batch] = await store.claimDue(0, 100, 1);
      await store.commit(batch as NonNullable<typeof batch>, draft(id, state, `batch:${id}`, createdAt), 0);
    }
    return store;
  };

  it.each(each)(
    '%s: trims by age only up to the first record young enough, leaving no hole behind it',
    async (_name, open) => {
      // A batch that waited for its media commits later with the time it was flushed: ages need
      // not grow with seqs.
      const store = await filled(open, [
        ['a', 'none', 90],
        ['b', 'none', 105],
        ['c', 'none', 95],
        ['d', 'none', 110],
      ]);
      expect(await store.trimOutbox(100, 100, Number.MAX_SAFE_INTEGER)).toBe(1);
      expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['b', 'c', 'd']);
    },
  );

  it.each(each)('%s: trims past records kept for delivery, in chunks, and keeps them', async (_name, open) => {
    const ids = Array.from({ length: 300 }, (_, i) => `r${i}`);
    const store = await filled(
      open,
      ids.map((id, i) => [id, i < 40 ? 'pending' : 'none', i] as [string, DeliveryState, number]),
    );
    expect(await store.trimOutbox(0, 0, Number.MAX_SAFE_INTEGER)).toBe(260);
    expect((await store.outboxAfter(0, 1000)).map((r) => r.id)).toEqual(ids.slice(0, 40));
  });
});

describe('sqlite store upgrade', () => {
  it('carries parts acknowledged by the previous version (table `buffered`) into buffers due at once', async () => {
    const path = join(tempDir().path, 'old.db');
    const old = new Database(path);
    old.exec('CREATE TABLE buffered (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    const part = (id: number, text: string) => ({
      id: String(id),
      debounceKey: 'cli:a\u0000u',
      receivedAt: 1000 + id,
      event: { ...item(text).part.event, sessionKey: 'cli:a' },
    });
    for (const [id, text] of [
      [1, 'one'],
      [2, 'two'],
    ] as const)
      old.prepare('INSERT INTO buffered (id, body) VALUES (?, ?)').run(id, JSON.stringify(part(id, text)));
    old.close();
    const store = new SqliteStore(path, { now: 5000 });
    expect(await store.nextDeadline()).toBeLessThanOrEqual(5000);
    const [batch] = await store.claimDue(5000, 1000, 10);
    expect(batch?.parts.map((p) => p.event.text)).toEqual(['one', 'two']);
    await store.close();
  });

  it('carries the turns of a file with a `turns` table (one row per session) into the turn log', async () => {
    const path = join(tempDir().path, 'turns.db');
    const first = new SqliteStore(path, { now: 0 });
    await first.close();
    const old = new Database(path);
    old.exec(`CREATE TABLE turns (session_key TEXT PRIMARY KEY, output_id TEXT NOT NULL, opened_at INTEGER NOT NULL, until INTEGER NOT NULL,
      held_mode TEXT, held_max_ms INTEGER, held_max INTEGER) WITHOUT ROWID`);
    old.prepare('INSERT INTO turns VALUES (?, ?, ?, ?, NULL, NULL, NULL)').run('s', 'o-a', 100, 10_100);
    old.close();
    const store = new SqliteStore(path, { now: 200 });
    expect(await store.turnOf('s', 200)).toEqual({
      sessionKey: 's',
      open: true,
      outputId: 'o-a',
      openedAt: 100,
      until: 10_100,
      held: 0,
    });
    await store.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'turns'").pluck().get()).toBeUndefined();
    db.close();
  });
});

describe('sqlite turn log', () => {
  it("keeps each session's newest turn when it compacts, and the turns read back after a restart", async () => {
    const path = join(tempDir().path, 'turn-log.db');
    const store = new SqliteStore(path, { now: 0 });
    const rule = { mode: 'interrupt' as const, maxMs: 1_000_000, maxHeld: 3 };
    // 3 sessions, each interrupting its own turn: 12,000 rows appended, compacted on the way.
    for (let i = 0; i < 12_000; i++) await arrive(store, `m${i}`, i, rule, `s${i % 3}`);
    await store.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM turn_log').pluck().get()).toBeLessThan(3000);
    db.close();
    const again = new SqliteStore(path, { now: 12_000 });
    expect(
      (await Promise.all(['s0', 's1', 's2'].map((key) => again.turnOf(key, 12_000)))).map((view) => view.outputId),
    ).toEqual(['o-m11997', 'o-m11998', 'o-m11999']);
    await again.close();
  }, 60_000);
});

describe('openStore', () => {
  it('opens the store a spec names and refuses others', async () => {
    const memory = await openStore('memory');
    expect(memory.kind).toBe('memory');
    await memory.close();
    const dir = tempDir().path;
    const sqlite = await openStore('sqlite:data/s.db', dir, { maxCorrelationGroups: 10 });
    expect(sqlite).toMatchObject({ kind: 'sqlite', durable: true, shared: false, path: join(dir, 'data/s.db') });
    await sqlite.close();
    await expect(openStore('redis:x')).rejects.toThrow('store: unsupported value "redis:x"');
  });
});

describe('sqlite store opened for the service', () => {
  it('loads its rows in chunks, answering the event loop between them, into the same state', async () => {
    const path = join(tempDir().path, 'chunks.db');
    const first = new SqliteStore(path, { now: 0 });
    const items = Array.from({ length: 6000 }, (_, i) => item(`m${i}`, { sessionKey: `s${i}`, claims: [`k${i}`] }));
    expect(verdicts(await first.admit(items, 0)).filter((v) => v === 'accepted')).toHaveLength(6000);
    const claims = first.claimStats();
    await first.close();

    let turns = 0;
    let opened = false;
    const tick = (): void => {
      turns++;
      if (!opened) setImmediate(tick);
    };
    setImmediate(tick);
    const store = await SqliteStore.open(path, { now: 1 });
    opened = true;
    try {
      // 6,000 claims and 6,000 parts are more than a chunk each: the loop turned in between.
      expect(turns).toBeGreaterThan(2);
      expect(await store.openBuffers()).toBe(6000);
      expect(store.claimStats().keys).toBe(claims.keys);
      expect(verdicts(await store.admit([item('again', { sessionKey: 's5999', claims: ['k5999'] })], 2))).toEqual([
        'claimed',
      ]);
    } finally {
      await store.close();
    }
  });
});
