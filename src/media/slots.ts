/** Give back a slot; calling it again does nothing. */
export type Release = () => void;

interface Lane {
  /** Slots this key holds. */
  active: number;
  /** Most slots this key may hold at once. */
  cap: number;
  waiters: Array<(release: Release) => void>;
  /** The key is in `turns` (it has waiters and is below its cap). */
  queued: boolean;
}

/**
 * Download slots: at most `limit` at once, and at most a per-key cap for one key (a sender),
 * so one sender's slow URLs cannot hold every slot. Keys with waiters take turns round-robin:
 * a key that just got a slot goes to the back, behind every other waiting key.
 */
export class Slots {
  private readonly lanes = new Map<string, Lane>();
  /** Keys with waiters below their cap, in turn order. */
  private readonly turns: string[] = [];
  private held = 0;

  constructor(private readonly limit: number) {}

  /** Slots held now. */
  get active(): number {
    return this.held;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    let count = 0;
    for (const lane of this.lanes.values()) count += lane.waiters.length;
    return count;
  }

  /**
   * Wait for a slot for `key` (holding at most `cap` at once). Rejects with the signal's
   * reason if it aborts first, giving up the place in the queue.
   */
  acquire(key: string, cap: number, signal: AbortSignal): Promise<Release> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { active: 0, cap, waiters: [], queued: false }));
    lane.cap = Math.max(1, cap);
    // Whenever a slot is free, every waiting key is at its cap (dispatch keeps it so): no one to pass.
    if (this.held < this.limit && lane.active < lane.cap) return Promise.resolve(this.grant(key, lane));
    const waiting = lane;
    return new Promise<Release>((resolve, reject) => {
      const waiter = (release: Release) => {
        signal.removeEventListener('abort', onAbort);
        resolve(release);
      };
      const onAbort = () => {
        const index = waiting.waiters.indexOf(waiter);
        if (index >= 0) waiting.waiters.splice(index, 1);
        this.prune(key, waiting);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiting.waiters.push(waiter);
      this.enqueue(key, waiting);
    });
  }

  private grant(key: string, lane: Lane): Release {
    this.held++;
    lane.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      lane.active--;
      this.enqueue(key, lane);
      this.prune(key, lane);
      this.dispatch();
    };
  }

  private enqueue(key: string, lane: Lane): void {
    if (lane.queued || lane.waiters.length === 0 || lane.active >= lane.cap) return;
    lane.queued = true;
    this.turns.push(key);
  }

  private dispatch(): void {
    while (this.held < this.limit && this.turns.length > 0) {
      const key = this.turns.shift() as string;
      const lane = this.lanes.get(key);
      if (!lane) continue;
      lane.queued = false;
      const waiter = lane.waiters.shift();
      if (!waiter) {
        this.prune(key, lane);
        continue;
      }
      const release = this.grant(key, lane);
      this.enqueue(key, lane);
      waiter(release);
    }
  }

  /** Forget an idle key (a lane still in `turns` stays until its turn comes). */
  private prune(key: string, lane: Lane): void {
    if (lane.active === 0 && lane.waiters.length === 0 && !lane.queued) this.lanes.delete(key);
  }
}
