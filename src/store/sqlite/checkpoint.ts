import type Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Writes committed since the last checkpoint that ask for the next one (a WAL of a megabyte or two). */
const WRITES_PER_CHECKPOINT = 1024;
/**
 * WAL frames (4 KiB pages) past which the writer's own connection finishes a checkpoint. Under
 * steady writes the worker's checkpoint never catches the last frames (the writer appends while
 * it copies), and SQLite only rewinds a WAL that is wholly copied: without this it would grow
 * without end. The writer's checkpoint then copies only that tail, syncs once, and truncates
 * the file (see `walLimitBytes`).
 */
export const MAX_WAL_FRAMES = 16_384;

/**
 * The bytes of `frames` WAL frames: each is a 24-byte header and one page, after the file's
 * 32-byte header. 16,384 frames of 4 KiB pages: 64.4 MiB.
 */
export function walLimitBytes(frames: number, pageSize: number): number {
  return 32 + frames * (24 + pageSize);
}

/** What `PRAGMA wal_checkpoint` answered, as the worker reports it. */
export interface CheckpointResult {
  /** Frames in the WAL and frames copied into the database file. */
  log: number;
  checkpointed: number;
  /** The worker flushed the database file after copying (see WORKER). */
  synced: boolean;
}

/**
 * The worker: its own connection to the file, a passive checkpoint on every request. A passive
 * checkpoint never waits for the writer and the writer never waits for it (WAL mode), so the
 * copy into the database file happens beside the event loop instead of inside a commit.
 *
 * Then the worker flushes the database file itself (fdatasync on a descriptor of its own).
 * SQLite syncs the database file only after a checkpoint that copied the whole WAL, and under
 * steady writes the worker's never does: every page it copied stayed dirty until the writer's
 * own checkpoint (MAX_WAL_FRAMES), whose fsync then flushed them all on the event loop, 12-23 ms
 * on this disk every few seconds at a few thousand writes a second (`strace`). Flushed here,
 * that fsync has only the writer's tail left. More syncs never weaken durability.
 *
 * CommonJS, run with `eval`, so it works from `src/` under the test runner as well as from
 * `dist/`.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { closeSync, fdatasyncSync, openSync } = require('node:fs');
const Database = require(workerData.module);
const db = new Database(workerData.path, { timeout: 0 });
// A descriptor to flush the database file with; without one, checkpoints run as before.
let file;
try { file = openSync(workerData.path, 'r'); } catch { file = undefined; }
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    if (file !== undefined) closeSync(file);
    parentPort.close();
    return;
  }
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    let synced = false;
    if (file !== undefined && result.checkpointed > 0) {
      try { fdatasyncSync(file); synced = true; } catch { /* the next checkpoint flushes again */ }
    }
    parentPort.postMessage({ ok: true, log: result.log, checkpointed: result.checkpointed, synced });
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String(error && error.message) });
  }
});
`;

/**
 * Checkpoints a WAL-mode SQLite file from a worker thread. The store turns SQLite's automatic
 * checkpoint off and calls `written(n)` after each commit; every WRITES_PER_CHECKPOINT writes, one
 * checkpoint is asked for (never two at once). If the worker cannot run (or fails), `fallBack`
 * turns the automatic checkpoint on again: slower commits now and then, never a WAL that grows
 * without end (nor does MAX_WAL_FRAMES let it).
 */
export class Checkpointer {
  private readonly worker: Worker;
  private writes = 0;
  private running = false;
  private closed = false;
  private failed = false;
  private readonly done: Array<(result: CheckpointResult) => void> = [];
  /** Checkpoints completed (for stats and tests). */
  count = 0;

  constructor(
    path: string,
    private readonly writer: {
      /** Turn SQLite's automatic checkpoint on again: the worker cannot run. */
      fallBack(reason: string): void;
      /** Checkpoint on the writer's connection, so the WAL can rewind. */
      finish(): void;
    },
    private readonly maxWalFrames = MAX_WAL_FRAMES,
  ) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER, { eval: true, workerData: { module, path } });
    // The worker never keeps the process alive: an unclosed store still lets it exit.
    this.worker.unref();
    this.worker.on(
      'message',
      (message: { ok: boolean; log?: number; checkpointed?: number; synced?: boolean; error?: string }) => {
        this.running = false;
        if (!message.ok) return this.fail(message.error ?? 'checkpoint failed');
        this.count++;
        const result = {
          log: message.log ?? 0,
          checkpointed: message.checkpointed ?? 0,
          synced: message.synced === true,
        };
        if (result.log >= this.maxWalFrames && !this.closed) this.writer.finish();
        for (const resolve of this.done.splice(0)) resolve(result);
        this.request();
      },
    );
    this.worker.on('error', (error) => this.fail(error.message));
  }

  /** `writes` writes were committed. */
  written(writes: number): void {
    this.writes += writes;
    this.request();
  }

  /** Ask for a checkpoint now; resolves when one has run (tests, tools). */
  checkpoint(): Promise<CheckpointResult> {
    return new Promise((resolve) => {
      this.done.push(resolve);
      this.request(true);
    });
  }

  /** Stop the worker (before the store's own connection closes, which then checkpoints last). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.failed) return;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    // Held while it closes: a caller awaiting close() as its last step must see it end.
    this.worker.ref();
    this.worker.postMessage('close');
    await exited;
  }

  private request(force = false): void {
    if (this.running || this.closed || this.failed) return;
    if (!force && this.writes < WRITES_PER_CHECKPOINT) return;
    this.running = true;
    this.writes = 0;
    this.worker.postMessage('checkpoint');
  }

  private fail(reason: string): void {
    if (this.failed) return;
    this.failed = true;
    this.running = false;
    this.writer.fallBack(reason);
    for (const resolve of this.done.splice(0)) resolve({ log: -1, checkpointed: -1, synced: false });
    void this.worker.terminate();
  }
}

/**
 * Commits never copy the WAL into the file themselves: a worker does, beside the event loop.
 * Past `maxWalFrames` the writer's connection (`db`) copies the tail and truncates the WAL to
 * nothing; should that not get its locks at once (a reader holding an old snapshot, e.g. an
 * operator's `sqlite3`), `journal_size_limit` truncates it to the bound at its next rewind. A
 * rewound WAL otherwise keeps its largest size on disk for as long as the store is open.
 * `store` says whether the store was closed, or its file deleted or replaced under it.
 */
export function checkpointOffThread(
  db: Database.Database,
  path: string,
  maxWalFrames: number,
  store: { closed(): boolean; replaced(): boolean },
): Checkpointer {
  db.pragma('wal_autocheckpoint = 0');
  db.pragma(`journal_size_limit = ${walLimitBytes(maxWalFrames, db.pragma('page_size', { simple: true }) as number)}`);
  return new Checkpointer(
    path,
    {
      fallBack: () => {
        if (store.closed()) return;
        try {
          db.pragma('wal_autocheckpoint = 1000');
        } catch {
          // A store that cannot set a pragma fails its next write, and says so there.
        }
      },
      finish: () => {
        if (store.closed() || store.replaced()) return;
        const wait = db.pragma('busy_timeout', { simple: true }) as number;
        try {
          // On the event loop: never wait for a reader, the next long WAL asks again.
          db.pragma('busy_timeout = 0');
          db.pragma('wal_checkpoint(TRUNCATE)');
        } catch {
          // As above; commits are not affected.
        } finally {
          db.pragma(`busy_timeout = ${wait}`);
        }
      },
    },
    maxWalFrames,
  );
}
