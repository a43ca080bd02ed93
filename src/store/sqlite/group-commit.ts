/** One write waiting for the next group commit. */
interface PendingWrite {
  run(): unknown;
  /** The write commits a batch: its record goes to the tail listeners once durable. */
  tails: boolean;
  /** A delivery waits for it (admit): committed ahead of background writes requested in the same turn. */
  urgent: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** What the store does around the transactions of a group commit. */
export interface GroupCommitHooks {
  /** Run `body` in one transaction (throws when it rolled back). */
  transaction(body: () => void): void;
  /** A group, or one write of a failed group, is about to be tried. */
  trying(): void;
  /**
   * A transaction rolled back: make the in-memory indexes the rows' view again. `error` is the
   * failure of a write tried on its own, undefined for a whole group.
   */
  rolledBack(error: unknown): void;
  /** A write that commits a batch is durable: its record goes to the tail listeners. */
  announce(record: unknown): void;
  /** A group is done (checkpoint accounting, the claim log's purge). */
  done(writes: number): void;
}

/**
 * Group commit: writes requested in one turn of the event loop share one transaction, and a
 * write is answered only once it is durable. When the group fails, every write runs again in
 * a transaction of its own, so one failing write (a refused row, a full disk) cannot fail the
 * others.
 */
export class GroupCommit {
  private queue: PendingWrite[] = [];
  /** Background writes held back one turn behind the admissions of their turn (see `flush`). */
  private held: PendingWrite[] = [];

  constructor(private readonly hooks: GroupCommitHooks) {}

  write<T>(run: () => T, tails = false, urgent = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(() => this.flush());
      this.queue.push({ run, tails, urgent, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** Commit every write asked for and held back, now (a close). */
  drain(): void {
    while (this.held.length > 0 || this.queue.length > 0) {
      this.flushHeld();
      this.flush();
    }
  }

  private flush(): void {
    const writes = this.queue;
    this.queue = [];
    if (writes.length === 0) return;
    // Deliveries waiting for their answer go first, in a transaction of their own; flush
    // commits and push acks of the same turn follow in the next turn, after the answers are
    // out, and ahead of anything asked for later (they are held once, never again).
    const urgent = writes.filter((write) => write.urgent);
    if (urgent.length === 0 || urgent.length === writes.length) return this.commitGroup(writes);
    if (this.held.length === 0) setImmediate(() => this.flushHeld());
    for (const write of writes) if (!write.urgent) this.held.push(write);
    this.commitGroup(urgent);
  }

  private flushHeld(): void {
    const writes = this.held;
    this.held = [];
    if (writes.length > 0) this.commitGroup(writes);
  }

  /** One transaction for `writes`; each is answered once it is durable (or refused). */
  private commitGroup(writes: PendingWrite[]): void {
    const { hooks } = this;
    let outcomes: Outcome[] = [];
    hooks.trying();
    try {
      // The common case: the whole group in one transaction, no statement more per write.
      hooks.transaction(() => {
        for (const write of writes) outcomes.push({ ok: true, value: write.run() });
      });
    } catch {
      // None of the group is on disk: the indexes become the rows' view again, then each
      // write gets a transaction of its own.
      hooks.rolledBack(undefined);
      outcomes = writes.map((write) => {
        hooks.trying();
        try {
          let value: unknown;
          hooks.transaction(() => {
            value = write.run();
          });
          return { ok: true, value };
        } catch (error) {
          hooks.rolledBack(error);
          return { ok: false, error };
        }
      });
    }
    writes.forEach((write, i) => {
      const outcome = outcomes[i] as Outcome;
      if (!outcome.ok) return write.reject(outcome.error);
      if (write.tails && outcome.value) hooks.announce(outcome.value);
      write.resolve(outcome.value);
    });
    hooks.done(writes.length);
  }
}
