import { backoffCeilingMs } from '../core/backoff.js';
import type { Clock } from '../core/clock.js';
import type { BufferLeases, LeasedBatch } from '../core/ports/index.js';

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;
/** A due buffer that a pass could not take (its session busy elsewhere, the store failing) is looked at again this late. */
const BLOCKED_RETRY_MS = 250;

/** Turn a leased batch into output (merge, media, commit); throws to retry later. */
export type Flush = (batch: LeasedBatch) => Promise<void>;

export interface SchedulerOptions {
  clock: Clock;
  /** The store's buffer-lease role: claimDue, renewLease, release, nextDeadline. */
  buffers: BufferLeases;
  onError(error: unknown, batch: LeasedBatch | undefined): void;
  /** How long a flusher owns a buffer before another instance may take it over. @default 30000 */
  leaseMs?: number;
  /**
   * Look for due buffers this often even without a local deadline: buffers admitted by other
   * instances, or left by one that died. Undefined for a store no one else shares.
   */
  pollMs?: number;
  /** Deadlines are rounded up to this grid, so one timer wake closes every buffer due in it. @default 10 */
  gridMs?: number;
  /** Flushes running at once (a restart backlog drains at most this many at a time). @default 64 */
  chunk?: number;
  /**
   * Batches taken per store call; the event loop answers requests between two such slices, so
   * a tick with many due buffers never holds an acknowledgement up for more than one slice's
   * flushes. @default 8
   */
  slice?: number;
}

/**
 * Closes debounce buffers when they are due. The buffers and their deadlines live in the
 * store; this keeps one timer for the earliest deadline it knows of (from admissions, from
 * the store at start, and by polling a shared store), takes due buffers with a lease, and
 * hands each to the `flush` it was started with. The store lets one buffer per session be leased at a time, so a
 * session's batches come out in order on any number of instances.
 */
export class FlushScheduler {
  private readonly leaseMs: number;
  private readonly gridMs: number;
  private readonly chunk: number;
  private readonly slice: number;
  private timer: unknown;
  private timerAt = Infinity;
  private pollTimer: unknown;
  private renewTimer: unknown;
  private running = false;
  private again = false;
  /** A pass is queued for the flushes that just ended (see `runSoon`). */
  private runQueued = false;
  private readonly inflight = new Set<LeasedBatch>();
  private readonly failures = new Map<string, number>();
  private idleWaiters: Array<() => void> = [];
  private stopped = false;
  /** A pass is giving the event loop its turn between two slices. */
  private yielding = false;
  /** Buffers admitted during those turns, not yet matched by as many batches taken. */
  private owed = 0;
  /** What a due batch is handed to, from `start` on. */
  private flush: Flush = async () => {
    throw new Error('the flush scheduler has not started');
  };

  constructor(private readonly options: SchedulerOptions) {
    this.leaseMs = options.leaseMs ?? 30_000;
    this.gridMs = options.gridMs ?? 10;
    this.chunk = options.chunk ?? 64;
    this.slice = Math.min(this.chunk, options.slice ?? 8);
  }

  /** Flushes running now. */
  get flushing(): number {
    return this.inflight.size;
  }

  /** Hand due batches to `flush` from now on, arm for the store's earliest deadline (buffers left by a previous run) and start polling. */
  async start(flush: Flush): Promise<void> {
    this.flush = flush;
    const next = await this.options.buffers.nextDeadline();
    if (next !== undefined) this.due(next);
    this.poll();
  }

  /** A buffer is due at `deadline` (from an admission). */
  due(deadline: number): void {
    if (this.stopped) return;
    if (this.yielding) this.owed++;
    const at = Math.ceil(deadline / this.gridMs) * this.gridMs;
    if (at >= this.timerAt) return;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.options.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.run();
      },
      Math.max(0, at - this.options.clock.now()),
    );
  }

  private poll(): void {
    const { pollMs } = this.options;
    if (pollMs === undefined || this.stopped) return;
    this.pollTimer = this.options.clock.setTimeout(() => {
      this.run();
      this.poll();
    }, pollMs);
  }

  /** One pass at a time; a request during a pass runs another after it. */
  private run(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    const now = this.options.clock.now();
    let taken = 0;
    void this.pass(now)
      .then(
        (n) => {
          taken = n;
        },
        (error: unknown) => this.options.onError(error, undefined),
      )
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.run();
        } else void this.rearm(now, taken);
      });
  }

  /**
   * Take due buffers a slice at a time, never more than `chunk` flushes at once; resolves how
   * many it took. Between slices the event loop answers requests: a busy tick (many buffers due
   * in one grid step) or a restart backlog never holds acknowledgements up for long.
   *
   * What the event loop admitted during those turns is owed: the next slices take at least as
   * many batches before the loop gets its next turn (still at most `chunk` in flight, the rest
   * once they end). With a fixed slice, a socket whose every read brings hundreds of events
   * outran the flushes: under a steady flood the buffers only grew, and no output left.
   */
  private async pass(now: number): Promise<number> {
    let taken = 0;
    for (;;) {
      const room = Math.min(Math.max(this.slice, this.owed), this.chunk - this.inflight.size);
      if (room <= 0) return taken; // a finishing flush asks for another pass (the debt stays)
      const batches = await this.options.buffers.claimDue(now, this.leaseMs, room);
      for (const batch of batches) this.start1(batch);
      taken += batches.length;
      this.owed = Math.max(0, this.owed - batches.length);
      if (batches.length < room || this.stopped) {
        this.owed = 0; // nothing more is due: what was admitted waits out its window
        return taken;
      }
      if (this.owed > 0) continue;
      this.yielding = true;
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.yielding = false;
    }
  }

  /**
   * Arm for the store's next deadline. One already past is a buffer the pass could not take:
   * its session's flush is running here (its end runs another pass), or the store or another
   * instance holds it; look again a little later rather than spin on it.
   */
  private async rearm(now: number, taken: number): Promise<void> {
    if (this.stopped) return;
    try {
      const next = await this.options.buffers.nextDeadline();
      if (next === undefined) return;
      if (next > now) this.due(next);
      else if (this.inflight.size === 0 || taken === 0) this.due(now + BLOCKED_RETRY_MS);
    } catch (error) {
      this.options.onError(error, undefined);
      this.due(now + BLOCKED_RETRY_MS);
    }
  }

  private start1(batch: LeasedBatch): void {
    this.inflight.add(batch);
    this.armRenewal();
    void this.flush(batch).then(
      () => {
        if (this.failures.size > 0) this.failures.delete(batch.debounceKey);
        this.ended(batch);
      },
      async (error: unknown) => {
        try {
          await this.failed(batch, error);
        } finally {
          this.ended(batch);
        }
      },
    );
  }

  private ended(batch: LeasedBatch): void {
    this.inflight.delete(batch);
    if (this.inflight.size === 0) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
    // The session may have its next buffer due now that this one is committed.
    this.runSoon();
  }

  /**
   * One pass for every flush that ends in the same turn: the batches of one pass (and of one
   * SQLite group commit) settle together, and a pass each would be a store call each.
   */
  private runSoon(): void {
    if (this.runQueued) return;
    this.runQueued = true;
    queueMicrotask(() => {
      this.runQueued = false;
      this.run();
    });
  }

  /** A failed flush gives its lease back, due again after a backoff, ahead of later batches. */
  private async failed(batch: LeasedBatch, error: unknown): Promise<void> {
    this.options.onError(error, batch);
    const attempt = this.failures.get(batch.debounceKey) ?? 0;
    this.failures.set(batch.debounceKey, attempt + 1);
    // The shared backoff's ceiling, unjittered: due buffers are taken in bounded slices, so
    // buffers that failed together are not flushed again all at once.
    const retryAt = this.options.clock.now() + backoffCeilingMs(attempt, { minMs: RETRY_MIN_MS, maxMs: RETRY_MAX_MS });
    await this.giveBack(batch, retryAt);
    this.due(retryAt);
  }

  /**
   * Release, tried again while the lease lasts: the store being away is the likely reason the
   * flush failed, and a lease left to run out would hold the session for a whole `leaseMs`.
   * If the store stays away past the lease, the buffer is taken over when it runs out.
   */
  private async giveBack(batch: LeasedBatch, retryAt: number): Promise<void> {
    for (let tries = 0; ; tries++) {
      const waitMs = backoffCeilingMs(tries, { minMs: RETRY_MIN_MS / 5, maxMs: Number.POSITIVE_INFINITY });
      try {
        await this.options.buffers.release(batch, retryAt);
        return;
      } catch {
        if (this.stopped || this.options.clock.now() + waitMs >= batch.leaseUntil) return;
      }
      await new Promise<void>((resolve) => this.options.clock.setTimeout(resolve, waitMs));
    }
  }

  /** Keep the leases of slow flushes (media downloads) alive. */
  private armRenewal(): void {
    if (this.renewTimer !== undefined) return;
    this.renewTimer = this.options.clock.setTimeout(() => {
      this.renewTimer = undefined;
      const now = this.options.clock.now();
      for (const batch of this.inflight) {
        void this.options.buffers.renewLease(batch, now, this.leaseMs).then(
          (held) => {
            if (held) batch.leaseUntil = now + this.leaseMs;
          },
          () => undefined,
        );
      }
      if (this.inflight.size > 0) this.armRenewal();
    }, this.leaseMs / 3);
  }

  /** Wait for every flush already started (and a pass under way). */
  async idle(): Promise<void> {
    while (this.inflight.size > 0 || this.running || this.runQueued) {
      await new Promise<void>((resolve) => {
        // A pass is store calls, not time: yield to the event loop, never to the (maybe manual) clock.
        if (this.inflight.size === 0) setImmediate(resolve);
        else this.idleWaiters.push(resolve);
      });
    }
  }

  /**
   * Flush one session's batches one after another. At the first failure that batch and those
   * behind it are given back (one attempt at shutdown; they come out, in order, at the next
   * start): a later batch committed now would overtake the failed one.
   */
  private async flushInTurn(queue: readonly LeasedBatch[]): Promise<boolean> {
    for (const [i, batch] of queue.entries()) {
      try {
        await this.flush(batch);
      } catch (error) {
        this.options.onError(error, batch);
        for (const left of queue.slice(i))
          await this.options.buffers.release(left, this.options.clock.now()).catch(() => undefined);
        return false;
      }
    }
    return true;
  }

  /**
   * Shutdown: stop the timers and, for a store no one else shares, flush every open buffer now
   * (one attempt; what fails stays in the store for the next start). A shared store's buffers
   * are left to the instances still running, which flush them when due.
   */
  async close(flushOpen: boolean): Promise<void> {
    this.stopped = true;
    for (const timer of [this.timer, this.pollTimer]) if (timer !== undefined) this.options.clock.clearTimeout(timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    await this.idle();
    if (flushOpen) {
      // Until nothing is left: committing a batch cut by a command or the count re-arms its
      // buffer with the parts behind the cut, which the next call takes (with the session's
      // other buffers, which the store holds back until then, in due order).
      for (;;) {
        const batches = await this.options.buffers.claimDue(Infinity, this.leaseMs, this.chunk);
        if (batches.length === 0) break;
        // Shutdown takes every buffer of a session at once (a group's senders each have one).
        // Sessions flush side by side, each one's batches in turn, in the order they were due,
        // as they would have while running: in parallel they would commit in the order their
        // downloads and lookups happened to end.
        const sessions = new Map<string, LeasedBatch[]>();
        for (const batch of batches) {
          const queue = sessions.get(batch.sessionKey);
          if (queue) queue.push(batch);
          else sessions.set(batch.sessionKey, [batch]);
        }
        const outcomes = await Promise.all([...sessions.values()].map((queue) => this.flushInTurn(queue)));
        // One attempt each: a failure means the store is away, and the rest waits for the next start.
        if (outcomes.includes(false)) break;
      }
    }
    if (this.renewTimer !== undefined) this.options.clock.clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
  }
}
