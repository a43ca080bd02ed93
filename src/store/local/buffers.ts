import type { BufferedPart } from '../../events/inbound.js';
import { DueHeap, type Due } from './due-heap.js';
import type { BufferRule, FlushReason } from '../../core/ports/index.js';
import { batchOf, closeAt } from '../rules/close.js';
import { heldDeadline } from '../rules/turn.js';

/** What a buffer keeps of a part: enough to decide deadlines, and the body when this process admitted it. */
/** What a held buffer keeps of the turn its messages wait for, and the rule they were held under. */
export interface HeldMeta {
  /** The output id of the turn they wait for (their release follows it up). */
  by: string;
  until: number;
  mode: 'collect' | 'followup';
  maxMs: number;
}

export interface PartMeta {
  id: string;
  receivedAt: number;
  /** Counts once toward `maxMessages` per distinct value (an album). */
  unit: string;
  /** The part closes its buffer at once (a command). */
  closes: boolean;
  /**
   * The body, kept here rather than in a map by id: a map entry per message was a hash insert,
   * lookup and delete on every message's path. Undefined for a part restored from the rows
   * (SQLite after a restart), whose body is read from its row when the batch is taken.
   */
  body: BufferedPart | undefined;
}

/** An open buffer as a store owned by one process keeps it. */
export interface OpenBuffer {
  debounceKey: string;
  sessionKey: string;
  /** The rule of the part that opened it. */
  rule: BufferRule;
  /** In arrival order. */
  parts: PartMeta[];
  deadline: number;
  reason: FlushReason;
  lease: { fence: number; until: number } | undefined;
  /** A failed flush gave its lease back: the session stays held until this buffer commits. */
  retrying?: boolean;
  /** Stamp of the buffer's live heap entry. */
  stamp: number;
  /** The heap entry it was last taken at: a batch given back behind a retrying one goes back to it. */
  taken?: Due;
  /** A session's held buffer (agent turns): due when `held.until` passes, or at `rule.maxMessages` (maxHeld) parts. */
  held?: HeldMeta;
  /** A session's buffer of batches deferred by a budget (see `Budgets.deferBatch`): due then, all its parts one batch. */
  deferred?: number;
}

/** A lease or a retry time on a buffer, carried over a rebuild (see `Buffers.holds`). */
export type BufferHold =
  { debounceKey: string; lease: { fence: number; until: number } } | { debounceKey: string; retryAt: number };

/** A buffer just leased, with the parts of its batch (the caller loads bodies not kept). */
export interface Taken {
  buffer: OpenBuffer;
  parts: PartMeta[];
  reason: FlushReason;
}

/**
 * Debounce buffers with deadlines and leases, shared by the memory and SQLite stores. A buffer
 * is due at its deadline, or, while leased, at its lease expiry (then it is taken over). At
 * most one buffer per session is leased at a time, so a session's batches stay in order.
 *
 * Deadlines live in a heap; leases do not. A lease almost always ends by a commit long before
 * it expires, and a heap entry per lease (one per flush) lived on, stale, until the heap was
 * next compacted. The leased buffers (the flushes in flight) are few: their expiries are
 * scanned only when one may be due.
 */
export class Buffers {
  protected readonly open = new Map<string, OpenBuffer>();
  /** sessionKey -> buffers of it leased now (one, except at shutdown), or waiting for their retry. */
  private readonly leasedSessions = new Map<string, number>();
  /** Sessions with a buffer waiting for its retry after a failed flush (at most one each). */
  private readonly retryingSessions = new Set<string>();
  /** Buffers leased now. */
  private readonly inFlight = new Set<OpenBuffer>();
  /** No lease of `inFlight` expires before this (a lower bound: renewals only push expiries later). */
  private leaseFloor = Infinity;
  private readonly heap = new DueHeap((due) => this.open.get(due.key)?.stamp === due.stamp);
  private stamp = 0;

  /** `keepHeld`: a shutdown claim leaves held buffers whose turn is open (a durable store keeps them for the next start). */
  constructor(private readonly keepHeld = false) {}

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
      // `[part]`, not `[]` and a push: a push reserves room for 17 parts (152 bytes), and most
      // buffers hold one message while they wait out their window.
      buffer = {
        debounceKey,
        sessionKey,
        rule,
        parts: [part],
        deadline: now,
        reason: 'window',
        lease: undefined,
        stamp: 0,
        taken: undefined,
      };
      this.open.set(debounceKey, buffer);
    } else buffer.parts.push(part);
    // A leased or retrying buffer keeps its due time: commit re-arms it from what is left. A
    // buffer already closed by a command or the count stays closed: the new part waits behind
    // the cut (see `batchSize`) for the next batch.
    if (
      buffer.lease ||
      buffer.retrying ||
      (buffer.parts.length > 1 && (buffer.reason === 'command' || buffer.reason === 'count'))
    )
      return buffer;
    this.arm(buffer, now);
    return buffer;
  }

  /** How many leading parts make the next batch (the store rule, `batchOf`). */
  batchSize(buffer: OpenBuffer): { size: number; closed?: 'command' | 'count' } {
    if (buffer.deferred !== undefined) return { size: buffer.parts.length };
    return batchOf(buffer.parts, buffer.rule.maxMessages);
  }

  /**
   * What the deadline of `buffer` would be at `now` from its parts. A batch closed by a command
   * or the count was due when the part that closed it arrived (after a restart too: it stays
   * ahead of its session's buffers that closed later).
   */
  deadlineOf(buffer: OpenBuffer, now: number): { deadline: number; reason: FlushReason } {
    if (buffer.deferred !== undefined) return { deadline: buffer.deferred, reason: 'budget' };
    if (buffer.held) return heldDeadline(buffer.parts, buffer.rule.maxMessages, buffer.held.until);
    const { size, closed } = this.batchSize(buffer);
    if (closed) return { deadline: Math.min(now, (buffer.parts[size - 1] as PartMeta).receivedAt), reason: closed };
    let lastAt = -Infinity;
    for (const part of buffer.parts) lastAt = Math.max(lastAt, part.receivedAt);
    return closeAt((buffer.parts[0] as PartMeta).receivedAt, lastAt, buffer.rule);
  }

  /**
   * Hold an open buffer for its typing sender (see `DebounceBuffers.holdForTyping`): its deadline
   * moves to `untilAt`, never past `maxWaitMs` after its first part, never earlier. The new
   * deadline, or undefined when nothing moved.
   */
  holdForTyping(debounceKey: string, untilAt: number): number | undefined {
    const buffer = this.open.get(debounceKey);
    if (!buffer || buffer.lease || buffer.retrying || buffer.held || buffer.deferred !== undefined) return undefined;
    if (buffer.reason !== 'window') return undefined;
    const deadline = Math.min(untilAt, (buffer.parts[0] as PartMeta).receivedAt + buffer.rule.maxWaitMs);
    if (deadline <= buffer.deadline) return undefined;
    buffer.deadline = deadline;
    buffer.reason = deadline === untilAt ? 'window' : 'max_wait';
    this.schedule(buffer, deadline);
    return deadline;
  }

  /**
   * Lease up to `limit` due buffers, oldest due time first, skipping sessions that have another
   * buffer leased. `now = Infinity` (shutdown) takes every buffer not leased, but for a
   * session's order (see inside).
   */
  claimDue(now: number, leaseMs: number, limit: number, nextFence: () => number): Taken[] {
    const batches: Taken[] = [];
    const waiting: Due[] = [];
    const shutdown = now === Infinity;
    // Shutdown takes every buffer of a session at once (taken: how many this call took of it),
    // except where the session was held before the call (a failed flush's buffer goes first,
    // alone; a leased one holds the rest back) and behind a batch cut by a command or the
    // count: the parts past the cut are due before later buffers of that session may be. What
    // waits is taken by the next call, in due order.
    const taken = shutdown ? new Map<string, number>() : undefined;
    const cut = shutdown ? new Set<string>() : undefined;
    this.expireLeases(now);
    for (let due = this.heap.peek(); due && due.at <= now && batches.length < limit; due = this.heap.peek()) {
      this.heap.pop();
      const buffer = this.open.get(due.key) as OpenBuffer;
      const session = buffer.sessionKey;
      // Held or deferred messages wait for their turn or budget in a durable store: the next start releases them when due.
      if (shutdown && this.keepHeld && (buffer.held || buffer.deferred !== undefined) && !buffer.lease) {
        waiting.push(due);
        continue;
      }
      const holds = buffer.lease !== undefined || buffer.retrying === true;
      const others = (this.leasedSessions.get(session) ?? 0) - (holds ? 1 : 0) - (taken?.get(session) ?? 0);
      if (others > 0 || (cut && (buffer.lease !== undefined || cut.has(session)))) {
        waiting.push(due);
        continue;
      }
      const reason: FlushReason = shutdown ? 'shutdown' : buffer.lease ? 'takeover' : buffer.reason;
      if (!holds) {
        this.leasedSessions.set(session, (this.leasedSessions.get(session) ?? 0) + 1);
        taken?.set(session, (taken.get(session) ?? 0) + 1);
      } else cut?.add(session);
      if (buffer.retrying) this.retryingSessions.delete(session);
      buffer.retrying = false;
      buffer.lease = { fence: nextFence(), until: now + leaseMs };
      buffer.taken = due;
      this.hold(buffer);
      const { size } = this.batchSize(buffer);
      if (cut && size < buffer.parts.length) cut.add(session);
      batches.push({ buffer, parts: buffer.parts.slice(0, size), reason });
    }
    for (const due of waiting) this.heap.push(due);
    this.heap.compact(this.open.size);
    return batches;
  }

  /** The buffer leased with `fence`, or undefined when the fence is stale. */
  leased(debounceKey: string, fence: number): OpenBuffer | undefined {
    const buffer = this.open.get(debounceKey);
    return buffer?.lease?.fence === fence ? buffer : undefined;
  }

  renew(buffer: OpenBuffer, until: number): void {
    if (!buffer.lease) return;
    buffer.lease.until = until;
    // Its expiry already went to the heap: take it back (its heap entry goes stale). A renewal
    // may also shorten a lease: the floor follows.
    if (!this.inFlight.has(buffer)) this.hold(buffer);
    else this.leaseFloor = Math.min(this.leaseFloor, until);
  }

  /**
   * End a lease after a commit: drop the batch's parts and re-arm from the parts that arrived
   * meanwhile. Returns false when none remain (the buffer is gone).
   */
  commit(buffer: OpenBuffer, partIds: readonly string[], now: number): boolean {
    buffer.parts = withoutParts(buffer.parts, partIds);
    this.unlease(buffer);
    if (buffer.parts.length === 0) {
      this.open.delete(buffer.debounceKey);
      return false;
    }
    this.arm(buffer, now);
    return true;
  }

  /**
   * End a lease after a failed flush: the buffer is due again at `retryAt`, and its session
   * stays held meanwhile, so no later batch of the session overtakes it. When another buffer
   * of the session already waits for its retry (a shutdown gives back every batch behind a
   * failed one), this one waits behind it, holding nothing, in the place in due order it was
   * taken from.
   */
  release(buffer: OpenBuffer, retryAt: number): void {
    if (!buffer.lease) return;
    if (this.retryingSessions.has(buffer.sessionKey)) {
      // Back to its place in due order (its deadline and stamp when taken): a later buffer of
      // the session that the claim left out (its limit) stays behind it.
      this.unlease(buffer);
      const { taken } = buffer;
      if (!taken) return this.schedule(buffer, buffer.deadline);
      buffer.stamp = taken.stamp;
      this.heap.push(taken);
      return;
    }
    buffer.deadline = retryAt;
    buffer.lease = undefined;
    this.inFlight.delete(buffer);
    buffer.retrying = true;
    this.retryingSessions.add(buffer.sessionKey);
    this.schedule(buffer, retryAt);
  }

  /**
   * End a buffer's flush lease at `now` under a fence no flush holds (a recall or an edit of a
   * message it holds): its flush commits nothing, and the claim that finds it takes it over.
   */
  breakLease(buffer: OpenBuffer, fence: number, now: number): void {
    if (!buffer.lease) return;
    buffer.lease = { fence, until: Math.min(buffer.lease.until, now) };
    if (this.inFlight.has(buffer)) this.leaseFloor = Math.min(this.leaseFloor, buffer.lease.until);
  }

  /**
   * The holds on buffers now: their leases, and the retry times of buffers whose flush failed
   * (a rebuild of the indexes carries both over; the rows keep neither).
   */
  holds(): BufferHold[] {
    const out: BufferHold[] = [];
    for (const buffer of this.open.values()) {
      if (buffer.lease) out.push({ debounceKey: buffer.debounceKey, lease: { ...buffer.lease } });
      else if (buffer.retrying) out.push({ debounceKey: buffer.debounceKey, retryAt: buffer.deadline });
    }
    return out;
  }

  /**
   * Take back a hold from before a rebuild, when its buffer is still there: a lease stays valid
   * for its owner's commit; a failed flush's buffer stays due at its retry time, its session held.
   */
  adopt(hold: BufferHold): void {
    const buffer = this.open.get(hold.debounceKey);
    if (!buffer || buffer.lease || buffer.retrying) return;
    this.leasedSessions.set(buffer.sessionKey, (this.leasedSessions.get(buffer.sessionKey) ?? 0) + 1);
    if ('lease' in hold) {
      buffer.lease = hold.lease;
      this.hold(buffer);
      return;
    }
    buffer.retrying = true;
    this.retryingSessions.add(buffer.sessionKey);
    buffer.deadline = hold.retryAt;
    this.schedule(buffer, hold.retryAt);
  }

  /** Put back a buffer recorded by an earlier run (SQLite open), not leased. */
  restore(buffer: OpenBuffer): void {
    this.open.set(buffer.debounceKey, buffer);
    this.schedule(buffer, buffer.deadline);
  }

  /** Earliest deadline of a buffer not leased, or earliest lease expiry. */
  nextDue(): number | undefined {
    let at = this.heap.peek()?.at ?? Infinity;
    if (this.leaseFloor < at)
      for (const buffer of this.inFlight) at = Math.min(at, (buffer.lease as NonNullable<OpenBuffer['lease']>).until);
    return at === Infinity ? undefined : at;
  }

  protected arm(buffer: OpenBuffer, now: number): void {
    const { deadline, reason } = this.deadlineOf(buffer, now);
    buffer.deadline = deadline;
    buffer.reason = reason;
    this.schedule(buffer, deadline);
  }

  private unlease(buffer: OpenBuffer): void {
    if (!buffer.lease && !buffer.retrying) return;
    if (buffer.lease) this.inFlight.delete(buffer);
    if (buffer.retrying) this.retryingSessions.delete(buffer.sessionKey);
    buffer.lease = undefined;
    buffer.retrying = false;
    const left = (this.leasedSessions.get(buffer.sessionKey) ?? 1) - 1;
    if (left > 0) this.leasedSessions.set(buffer.sessionKey, left);
    else this.leasedSessions.delete(buffer.sessionKey);
  }

  /** A lease taken: its buffer's deadline entry goes stale, and the lease expires off the heap. */
  private hold(buffer: OpenBuffer): void {
    buffer.stamp = ++this.stamp;
    this.inFlight.add(buffer);
    this.leaseFloor = Math.min(this.leaseFloor, (buffer.lease as NonNullable<OpenBuffer['lease']>).until);
  }

  /**
   * Move the buffers whose lease expired by `now` to the heap, due at their expiry: the claim
   * that finds them there takes them over (a renewal first takes one back, see `renew`).
   */
  private expireLeases(now: number): void {
    if (now < this.leaseFloor) return;
    let floor = Infinity;
    for (const buffer of this.inFlight) {
      const { until } = buffer.lease as NonNullable<OpenBuffer['lease']>;
      if (until <= now) {
        this.inFlight.delete(buffer);
        this.schedule(buffer, until);
      } else floor = Math.min(floor, until);
    }
    this.leaseFloor = floor;
  }

  private schedule(buffer: OpenBuffer, at: number): void {
    buffer.stamp = ++this.stamp;
    this.heap.push({ at, stamp: buffer.stamp, key: buffer.debounceKey });
  }
}

/** `parts` without those of `ids`. A batch is the leading parts (see `batchSize`): then a slice, no set. */
function withoutParts(parts: PartMeta[], ids: readonly string[]): PartMeta[] {
  let leading = ids.length <= parts.length;
  for (let i = 0; leading && i < ids.length; i++) leading = (parts[i] as PartMeta).id === ids[i];
  if (leading) return ids.length === parts.length ? [] : parts.slice(ids.length);
  const done = new Set(ids);
  return parts.filter((part) => !done.has(part.id));
}
