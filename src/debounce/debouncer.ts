import type { Clock } from '../clock.js';
import type { DebounceOptions } from '../config/schema.js';
import type { BufferedPart } from '../store/types.js';

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;

export type FlushReason = 'window' | 'count' | 'max_wait' | 'command' | 'shutdown';

/** A closed buffer, handed to the flush function in the order buffers close, per session. */
export interface Batch {
  debounceKey: string;
  sessionKey: string;
  parts: BufferedPart[];
  reason: FlushReason;
}

interface Buffer {
  parts: BufferedPart[];
  /** Messages counted toward maxMessages: an album (Telegram media_group_id) counts once. */
  units: number;
  albums: Set<string> | undefined;
  firstAt: number;
  lastAt: number;
  /** Bumped whenever the deadline moves; heap entries with an older version are stale. */
  version: number;
  deadline: number;
  options: DebounceOptions;
}

interface Deadline {
  at: number;
  key: string;
  version: number;
}

export interface DebouncerOptions {
  clock: Clock;
  /** The debounce options of a part's channel. */
  optionsFor(part: BufferedPart): DebounceOptions;
  /** Turns a batch into output; batches of one session are passed one at a time, in order. */
  flush(batch: Batch): Promise<void>;
  /** Called when a flush throws (it is logged, the batch stays in the store). */
  onError(error: unknown, batch: Batch): void;
}

/**
 * Per-(session, sender) buffers that merge a user's rapid fragments. A buffer closes after
 * `windowMs` of quiet, at `maxMessages`, at `maxWaitMs` after its first part (a chatty user
 * cannot hold it open forever), or at once on a command. One timer serves every buffer: a
 * binary heap of deadlines with lazy deletion, so re-arming a buffer is one heap push.
 */
export class Debouncer {
  private readonly buffers = new Map<string, Buffer>();
  private readonly heap: Deadline[] = [];
  private timer: unknown;
  private timerAt = Infinity;
  /**
   * Sessions with a flush under way, and the batches waiting behind it (null: none waiting).
   * One drain loop per busy session keeps its batches in order.
   */
  private readonly busy = new Map<string, Batch[] | null>();
  /** Drain loops running, and who waits for them all to end. */
  private draining = 0;
  private idleWaiters: Array<() => void> = [];
  private shuttingDown = false;

  constructor(private readonly options: DebouncerOptions) {}

  /** Number of open buffers. */
  get open(): number {
    return this.buffers.size;
  }

  /** Add a recorded part; `command` closes the buffer at once with this part last. */
  add(part: BufferedPart, command: boolean): void {
    this.append(part);
    this.schedule(part.debounceKey, command);
  }

  /**
   * Re-arm buffers left in the store by a previous run: all parts of a buffer go back in
   * before its deadline is decided, so a restart never splits a batch.
   */
  restore(parts: readonly BufferedPart[]): void {
    for (const part of parts) this.append(part);
    for (const key of new Set(parts.map((part) => part.debounceKey))) this.schedule(key, false);
  }

  private append(part: BufferedPart): void {
    let buffer = this.buffers.get(part.debounceKey);
    if (!buffer) {
      const options = this.options.optionsFor(part);
      buffer = { parts: [], units: 0, albums: undefined, firstAt: part.receivedAt, lastAt: 0, version: 0, deadline: 0, options };
      this.buffers.set(part.debounceKey, buffer);
    }
    buffer.parts.push(part);
    buffer.lastAt = Math.max(buffer.lastAt, part.receivedAt);
    const album = part.event.fields?.media_group_id;
    if (album === undefined) buffer.units++;
    else if (!buffer.albums?.has(album)) {
      (buffer.albums ??= new Set()).add(album);
      buffer.units++;
    }
  }

  private schedule(key: string, command: boolean): void {
    const buffer = this.buffers.get(key) as Buffer;
    const { windowMs, maxWaitMs, maxMessages, flushCommands } = buffer.options;
    if (command && flushCommands) return this.close(key, 'command');
    if (buffer.units >= maxMessages) return this.close(key, 'count');
    const quietAt = buffer.lastAt + windowMs;
    const hardAt = buffer.firstAt + maxWaitMs;
    buffer.deadline = Math.min(quietAt, hardAt);
    if (buffer.deadline <= this.options.clock.now()) return this.close(key, quietAt <= hardAt ? 'window' : 'max_wait');
    buffer.version++;
    this.push({ at: buffer.deadline, key, version: buffer.version });
  }

  /** Close every open buffer and wait until every batch is flushed (shutdown). */
  async flushAll(): Promise<void> {
    this.shuttingDown = true;
    for (const key of [...this.buffers.keys()]) this.close(key, 'shutdown');
    await this.idle();
  }

  /** Wait for every flush already started. */
  async idle(): Promise<void> {
    while (this.draining > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stop the timer without flushing (the store keeps the parts for the next start). */
  stop(): void {
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private close(key: string, reason: FlushReason): void {
    const buffer = this.buffers.get(key);
    if (!buffer) return;
    this.buffers.delete(key);
    const first = buffer.parts[0] as BufferedPart;
    const batch: Batch = { debounceKey: key, sessionKey: first.event.sessionKey, parts: buffer.parts, reason };
    const sessionKey = batch.sessionKey;
    if (this.busy.has(sessionKey)) {
      const waiting = this.busy.get(sessionKey);
      if (waiting) waiting.push(batch);
      else this.busy.set(sessionKey, [batch]);
      return;
    }
    this.busy.set(sessionKey, null);
    this.draining++;
    void this.drain(sessionKey, batch);
  }

  /**
   * Flush a session's batches one at a time, in order. When a flush fails (the store is busy
   * or away) it is tried again with backoff, still ahead of the session's later batches. The
   * parts stay in the store meanwhile, so nothing is lost; at shutdown one attempt is made and
   * what fails waits for the next start.
   */
  private async drain(sessionKey: string, first: Batch): Promise<void> {
    for (let batch: Batch | undefined = first; batch; batch = this.busy.get(sessionKey)?.shift()) {
      for (let attempt = 0; ; attempt++) {
        try {
          await this.options.flush(batch);
          break;
        } catch (error) {
          this.options.onError(error, batch);
          if (this.shuttingDown) break;
          await new Promise<void>((resolve) => this.options.clock.setTimeout(resolve, Math.min(RETRY_MIN_MS * 2 ** attempt, RETRY_MAX_MS)));
          if (this.shuttingDown) break;
        }
      }
    }
    this.busy.delete(sessionKey);
    if (--this.draining === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.options.clock.now();
    while (this.heap.length > 0 && (this.heap[0] as Deadline).at <= now) {
      const due = this.pop();
      const buffer = this.buffers.get(due.key);
      if (!buffer || buffer.version !== due.version) continue;
      const hardAt = buffer.firstAt + buffer.options.maxWaitMs;
      this.close(due.key, due.at >= hardAt ? 'max_wait' : 'window');
    }
    this.arm();
  }

  private arm(): void {
    const top = this.heap[0];
    if (!top || top.at >= this.timerAt) return;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timerAt = top.at;
    this.timer = this.options.clock.setTimeout(() => this.onTimer(), Math.max(0, top.at - this.options.clock.now()));
  }

  private push(entry: Deadline): void {
    const heap = this.heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((heap[parent] as Deadline).at <= entry.at) break;
      heap[i] = heap[parent] as Deadline;
      i = parent;
    }
    heap[i] = entry;
    this.arm();
  }

  private pop(): Deadline {
    const heap = this.heap;
    const top = heap[0] as Deadline;
    const last = heap.pop() as Deadline;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child = right < heap.length && (heap[right] as Deadline).at < (heap[left] as Deadline).at ? right : left;
        if ((heap[child] as Deadline).at >= last.at) break;
        heap[i] = heap[child] as Deadline;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}
