import { DueHeap, type Due } from './due-heap.js';
import type { BufferRule, FlushReason } from './types.js';

/** What a buffer keeps of a part: enough to decide deadlines; the body stays in the rows. */
export interface PartMeta {
  id: string;
  receivedAt: number;
  /** Counts once toward `maxMessages` per distinct value (an album). */
  unit: string;
  /** The part closes its buffer at once (a command). */
  closes: boolean;
}

/** An open buffer as a store owned by one process keeps it. */
export interface OpenBuffer {
  debounceKey: string;
  sessionKey: string;
  /** The rule of the part that opened it. */
  rule: BufferRule;
  /** In arrival order. */
  parts: PartMeta[];
  /** Parts per unit, so removing a batch keeps the distinct-unit count exact. */
  units: Map<string, number>;
  deadline: number;
  reason: FlushReason;
  lease: { fence: number; until: number } | undefined;
  /** Stamp of the buffer's live heap entry. */
  stamp: number;
}

/** A buffer just leased: the caller loads the parts' bodies. */
export interface Taken {
  buffer: OpenBuffer;
  partIds: string[];
  reason: FlushReason;
}

/**
 * Debounce buffers with deadlines and leases, shared by the memory and SQLite stores. A buffer
 * is due at its deadline, or, while leased, at its lease expiry (then it is taken over). At
 * most one buffer per session is leased at a time, so a session's batches stay in order.
 */
export class Buffers {
  private readonly open = new Map<string, OpenBuffer>();
  /** sessionKey -> buffers of it leased now (one, except at shutdown). */
  private readonly leasedSessions = new Map<string, number>();
  private readonly heap = new DueHeap((due) => this.open.get(due.key)?.stamp === due.stamp);
  private stamp = 0;

  get size(): number {
    return this.open.size;
  }

  get(debounceKey: string): OpenBuffer | undefined {
    return this.open.get(debounceKey);
  }

  /** Append a part (opening the buffer with `rule` when new) and settle its deadline at `now`. */
  append(debounceKey: string, sessionKey: string, rule: BufferRule, part: PartMeta, now: number): OpenBuffer {
    let buffer = this.open.get(debounceKey);
    if (!buffer) {
      buffer = { debounceKey, sessionKey, rule, parts: [], units: new Map(), deadline: now, reason: 'window', lease: undefined, stamp: 0 };
      this.open.set(debounceKey, buffer);
    }
    buffer.parts.push(part);
    buffer.units.set(part.unit, (buffer.units.get(part.unit) ?? 0) + 1);
    // A leased buffer keeps its due time (the lease expiry): commit re-arms it from what is left.
    // A buffer already closed by a command or the count stays closed.
    if (buffer.lease || (buffer.parts.length > 1 && (buffer.reason === 'command' || buffer.reason === 'count'))) return buffer;
    this.arm(buffer, now);
    return buffer;
  }

  /** What the deadline of `buffer` would be at `now` from its parts. */
  deadlineOf(buffer: OpenBuffer, now: number): { deadline: number; reason: FlushReason } {
    if (buffer.parts.some((part) => part.closes)) return { deadline: now, reason: 'command' };
    if (buffer.units.size >= buffer.rule.maxMessages) return { deadline: now, reason: 'count' };
    let lastAt = -Infinity;
    for (const part of buffer.parts) lastAt = Math.max(lastAt, part.receivedAt);
    const quietAt = lastAt + buffer.rule.windowMs;
    const hardAt = (buffer.parts[0] as PartMeta).receivedAt + buffer.rule.maxWaitMs;
    return quietAt <= hardAt ? { deadline: quietAt, reason: 'window' } : { deadline: hardAt, reason: 'max_wait' };
  }

  /**
   * Lease up to `limit` due buffers, oldest due time first, skipping sessions that have another
   * buffer leased. `now = Infinity` takes every buffer not leased (shutdown).
   */
  claimDue(now: number, leaseMs: number, limit: number, nextFence: () => number): Taken[] {
    const taken: Taken[] = [];
    const waiting: Due[] = [];
    const shutdown = now === Infinity;
    for (let due = this.heap.peek(); due && due.at <= now && taken.length < limit; due = this.heap.peek()) {
      this.heap.pop();
      const buffer = this.open.get(due.key) as OpenBuffer;
      const others = (this.leasedSessions.get(buffer.sessionKey) ?? 0) - (buffer.lease ? 1 : 0);
      if (shutdown ? buffer.lease !== undefined : others > 0) {
        waiting.push(due);
        continue;
      }
      const reason: FlushReason = shutdown ? 'shutdown' : buffer.lease ? 'takeover' : buffer.reason;
      if (!buffer.lease) this.leasedSessions.set(buffer.sessionKey, (this.leasedSessions.get(buffer.sessionKey) ?? 0) + 1);
      buffer.lease = { fence: nextFence(), until: now + leaseMs };
      this.schedule(buffer, buffer.lease.until);
      taken.push({ buffer, partIds: buffer.parts.map((part) => part.id), reason });
    }
    for (const due of waiting) this.heap.push(due);
    this.heap.compact(this.open.size);
    return taken;
  }

  /** The buffer leased with `fence`, or undefined when the fence is stale. */
  leased(debounceKey: string, fence: number): OpenBuffer | undefined {
    const buffer = this.open.get(debounceKey);
    return buffer?.lease?.fence === fence ? buffer : undefined;
  }

  renew(buffer: OpenBuffer, until: number): void {
    if (!buffer.lease) return;
    buffer.lease.until = until;
    this.schedule(buffer, until);
  }

  /**
   * End a lease after a commit: drop the batch's parts and re-arm from the parts that arrived
   * meanwhile. Returns false when none remain (the buffer is gone).
   */
  commit(buffer: OpenBuffer, partIds: readonly string[], now: number): boolean {
    const done = new Set(partIds);
    buffer.parts = buffer.parts.filter((part) => !done.has(part.id));
    this.unlease(buffer);
    if (buffer.parts.length === 0) {
      this.open.delete(buffer.debounceKey);
      return false;
    }
    buffer.units.clear();
    for (const part of buffer.parts) buffer.units.set(part.unit, (buffer.units.get(part.unit) ?? 0) + 1);
    this.arm(buffer, now);
    return true;
  }

  /** End a lease after a failed flush: the buffer is due again at `retryAt`. */
  release(buffer: OpenBuffer, retryAt: number): void {
    this.unlease(buffer);
    buffer.deadline = retryAt;
    this.schedule(buffer, retryAt);
  }

  /** Put back a buffer recorded by an earlier run (SQLite open), not leased. */
  restore(buffer: OpenBuffer): void {
    this.open.set(buffer.debounceKey, buffer);
    this.schedule(buffer, buffer.deadline);
  }

  /** Earliest deadline of a buffer not leased, or earliest lease expiry. */
  nextDue(): number | undefined {
    const at = this.heap.peek()?.at;
    return at === undefined || at === Infinity ? undefined : at;
  }

  private arm(buffer: OpenBuffer, now: number): void {
    const { deadline, reason } = this.deadlineOf(buffer, now);
    buffer.deadline = deadline;
    buffer.reason = reason;
    this.schedule(buffer, deadline);
  }

  private unlease(buffer: OpenBuffer): void {
    if (!buffer.lease) return;
    buffer.lease = undefined;
    const left = (this.leasedSessions.get(buffer.sessionKey) ?? 1) - 1;
    if (left > 0) this.leasedSessions.set(buffer.sessionKey, left);
    else this.leasedSessions.delete(buffer.sessionKey);
  }

  private schedule(buffer: OpenBuffer, at: number): void {
    buffer.stamp = ++this.stamp;
    this.heap.push({ at, stamp: buffer.stamp, key: buffer.debounceKey });
  }
}
