import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Checkpointer, walLimitBytes } from '../../src/store/sqlite/checkpoint.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempDir } from '../support/helpers.js';
import { draft, item } from '../../src/testing/index.js';

/** A WAL-mode file with SQLite's own checkpoint off, as the store opens it. */
function walFile(): { path: string; db: Database.Database; write(rows: number): void } {
  const path = join(tempDir().path, 'wal.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (v TEXT)');
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const write = db.transaction((rows: number) => {
    for (let i = 0; i < rows; i++) insert.run('x'.repeat(500));
  });
  return { path, db, write };
}

describe('WAL checkpoints off the event loop', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('copies the WAL into the file from a worker, and asks the writer to finish a long one so it rewinds', async () => {
    const { path, db, write } = walFile();
    let finished = 0;
    const checkpointer = new Checkpointer(
      path,
      {
        fallBack: () => {
          throw new Error('the worker runs');
        },
        finish: () => {
          finished++;
          db.pragma('wal_checkpoint(PASSIVE)');
        },
      },
      40,
    );
    cleanup.push(
      () => db.close(),
      () => checkpointer.close(),
    );

    for (let i = 0; i < 5; i++) write(100);
    const first = await checkpointer.checkpoint();
    expect(first.log).toBeGreaterThanOrEqual(40);
    expect(first.checkpointed).toBe(first.log);
    // The worker flushed the pages it copied, so the writer's checkpoint has only its tail to sync.
    expect(first.synced).toBe(true);
    // Past 40 frames the writer's connection checkpointed too, so the next write rewinds the WAL.
    expect(finished).toBe(1);
    write(1);
    const second = await checkpointer.checkpoint();
    expect(second.log).toBeLessThan(first.log);
    expect(finished).toBe(1);
    expect(checkpointer.count).toBe(2);
  });

  it('asks for a checkpoint once enough writes were committed, one at a time', async () => {
    const { path, db, write } = walFile();
    const checkpointer = new Checkpointer(path, { fallBack: () => undefined, finish: () => undefined });
    cleanup.push(
      () => db.close(),
      () => checkpointer.close(),
    );
    write(10);
    checkpointer.written(1000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(checkpointer.count).toBe(0);
    checkpointer.written(24);
    // The request is a message to the worker: wait for its answer.
    for (let i = 0; i < 500 && checkpointer.count === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(checkpointer.count).toBe(1);
  });

  it("falls back to SQLite's own checkpoint when the worker cannot open the file", async () => {
    const reasons: string[] = [];
    const checkpointer = new Checkpointer(join(tempDir().path, 'no', 'such', 'dir', 'x.db'), {
      fallBack: (reason) => reasons.push(reason),
      finish: () => undefined,
    });
    const result = await checkpointer.checkpoint();
    expect(result.log).toBe(-1);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(/directory does not exist|unable to open/);
    await checkpointer.close();
  });

  it("is how the store runs: SQLite's automatic checkpoint off, the WAL copied by the worker, nothing lost", async () => {
    const path = join(tempDir().path, 'store.db');
    const store = new SqliteStore(path, { now: 0 });
    const db = (store as unknown as { db: Database.Database }).db;
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    for (let i = 0; i < 40; i++) await store.admit([item(`m${i}`, { sessionKey: `s${i}` })], i);
    const batches = await store.claimDue(Infinity, 30_000, 100);
    for (const batch of batches) await store.commit(batch, draft(`out-${batch.debounceKey}`), 100);
    const result = await store.checkpointer!.checkpoint();
    expect(result.checkpointed).toBe(result.log);
    expect(statSync(path).size).toBeGreaterThan(4096);
    await store.close();
    const reopened = new SqliteStore(path, { now: 100 });
    expect((await reopened.outboxAfter(0, 100)).length).toBe(batches.length);
    expect(batches.length).toBe(40);
    await reopened.close();
  });
});

describe("the WAL's bound on disk", () => {
  const frames = 64;
  const limit = walLimitBytes(frames, 4096);
  const walSize = (path: string) => statSync(`${path}-wal`).size;
  const fill = async (store: SqliteStore, from: number, count: number) => {
    for (let i = from; i < from + count; i++) await store.admit([item(`m${i}`, { sessionKey: `s${i}` })], i);
  };

  it('truncates a WAL past its bound once the checkpoint has copied it', async () => {
    const path = join(tempDir().path, 'bound.db');
    const store = new SqliteStore(path, { now: 0, maxWalFrames: frames });
    try {
      await fill(store, 0, 300);
      expect(walSize(path)).toBeGreaterThan(limit);
      const result = await store.checkpointer!.checkpoint();
      expect(result.log).toBeGreaterThanOrEqual(frames);
      expect(walSize(path)).toBeLessThanOrEqual(limit);
      // Nothing was lost on the way.
      await fill(store, 300, 1);
      expect(await store.openBuffers()).toBe(301);
    } finally {
      await store.close();
    }
  });

  it('truncates it to the bound at its next rewind when a reader held the truncation off', async () => {
    const path = join(tempDir().path, 'held.db');
    const store = new SqliteStore(path, { now: 0, maxWalFrames: frames });
    const reader = new Database(path, { readonly: true });
    try {
      expect(store['db'].pragma('journal_size_limit', { simple: true })).toBe(limit);
      await fill(store, 0, 300);
      // An operator's sqlite3 in a read transaction: the writer's truncation cannot wait for it.
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM meta').get();
      await store.checkpointer!.checkpoint();
      const held = walSize(path);
      expect(held).toBeGreaterThan(limit);
      reader.exec('COMMIT');
      // Copied whole, then rewound by the next write: cut down to the bound.
      await store.checkpointer!.checkpoint();
      await fill(store, 300, 1);
      expect(walSize(path)).toBeLessThanOrEqual(limit);
    } finally {
      reader.close();
      await store.close();
    }
  });
});

describe('closing the store as the last step of a script', () => {
  it('ends: the worker is waited for, not dropped with the close still pending', () => {
    // In a child with nothing else on its event loop (vitest's own keeps this one alive), from
    // the built store that `npm test` builds first.
    const path = join(tempDir().path, 'last.db');
    const store = join(process.cwd(), 'dist/store/sqlite/sqlite.js');
    const script = `const { SqliteStore } = await import(${JSON.stringify(store)});
      const s = new SqliteStore(${JSON.stringify(path)}, { now: 0 });
      await new Promise((resolve) => setTimeout(resolve, 300)); // the worker is up and idle
      await s.close();
      console.log('closed');`;
    const file = join(tempDir().path, 'last.mjs');
    writeFileSync(file, script);
    const out = execFileSync(process.execPath, [file], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(out.trim()).toBe('closed');
  });
});
