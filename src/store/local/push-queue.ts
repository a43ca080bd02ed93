import { DueHeap } from './due-heap.js';

/** What the queue keeps of a pending record: no body, which is read when it is pushed. */
export interface QueuedRecord {
  seq: number;
  nextAttemptAt: number;
}

interface SessionQueue {
  sessionKey: string;
  /** Pending records in seq order; the live ones start at `start`, the head is the one pushed. */
  records: QueuedRecord[];
  start: number;
  lease: { token: number; until: number } | undefined;
  stamp: number;
}

/** A head just leased to a pusher. */
export interface PushTaken {
  sessionKey: string;
  seq: number;
  token: number;
  leaseUntil: number;
  /** The head's earlier lease ran out before this one took it. */
  expired: boolean;
}

/**
 * Per-session push queues of a store owned by one process. Only a session's head (its oldest
 * pending record) is ever scheduled, in one heap of heads by due time (`nextAttemptAt`, or
 * the lease expiry while a pusher holds it), so claiming costs O(due sessions x log sessions)
 * however many records wait behind the heads.
 */
export class PushQueue {
  private readonly sessions = new Map<string, SessionQueue>();
  private readonly heap = new DueHeap((due) => this.sessions.get(due.key)?.stamp === due.stamp);
  private stamp = 0;
  /** Pending records in all sessions. */
  size = 0;

  /** Queue a new record at the end of its session (seqs only grow). */
  enqueue(sessionKey: string, record: QueuedRecord): void {
    const session = this.session(sessionKey);
    session.records.push(record);
    this.size++;
    if (session.records.length - session.start === 1) this.schedule(session);
  }

  /**
   * Put a record back in seq order (a requeued dead letter): before later records of its
   * session, but never before a head a pusher holds now.
   */
  insert(sessionKey: string, record: QueuedRecord): void {
    const session = this.session(sessionKey);
    const { records } = session;
    let at = records.length;
    const first = session.start + (session.lease ? 1 : 0);
    while (at > first && (records[at - 1] as QueuedRecord).seq > record.seq) at--;
    records.splice(at, 0, record);
    this.size++;
    if (at === session.start) this.schedule(session);
  }

  /** Lease up to `limit` due heads, earliest first. */
  claim(now: number, leaseMs: number, limit: number, nextToken: () => number): PushTaken[] {
    const taken: PushTaken[] = [];
    for (let due = this.heap.peek(); due && due.at <= now && taken.length < limit; due = this.heap.peek()) {
      this.heap.pop();
      const session = this.sessions.get(due.key) as SessionQueue;
      const head = session.records[session.start] as QueuedRecord;
      const expired = session.lease !== undefined;
      session.lease = { token: nextToken(), until: now + leaseMs };
      this.schedule(session);
      taken.push({
        sessionKey: session.sessionKey,
        seq: head.seq,
        token: session.lease.token,
        leaseUntil: session.lease.until,
        expired,
      });
    }
    this.heap.compact(this.sessions.size);
    return taken;
  }

  /** The head record leased with `token`, or undefined when the token is stale. */
  leased(sessionKey: string, seq: number, token: number): QueuedRecord | undefined {
    const session = this.sessions.get(sessionKey);
    const head = session?.records[session.start];
    return session?.lease?.token === token && head?.seq === seq ? head : undefined;
  }

  /** The lease on the head record `seq`, held or run out (undefined: not the head, or not leased). */
  leaseOn(sessionKey: string, seq: number): { token: number; until: number } | undefined {
    const session = this.sessions.get(sessionKey);
    const lease = session?.lease;
    return lease && session.records[session.start]?.seq === seq ? { ...lease } : undefined;
  }

  /** Move a held lease's end later; false when `token` no longer holds the head or its lease ran out by `now`. */
  extend(sessionKey: string, seq: number, token: number, until: number, now: number): boolean {
    const session = this.sessions.get(sessionKey);
    const lease = session?.lease;
    if (!lease || lease.token !== token || lease.until < now || session.records[session.start]?.seq !== seq)
      return false;
    if (until > lease.until) {
      lease.until = until;
      this.schedule(session);
    }
    return true;
  }

  /** The head is done (delivered or dead): the session's next record becomes its head. */
  finish(sessionKey: string): void {
    const session = this.sessions.get(sessionKey);
    if (!session) return;
    session.lease = undefined;
    session.start++;
    this.size--;
    if (session.start === session.records.length) {
      this.sessions.delete(sessionKey);
      return;
    }
    // Compact once the consumed prefix is half the array: amortized O(1) per record.
    if (session.start > 32 && session.start * 2 > session.records.length) {
      session.records = session.records.slice(session.start);
      session.start = 0;
    }
    this.schedule(session);
  }

  /** The head stays, unleased, due again at `at`. */
  retry(sessionKey: string, at: number): void {
    const session = this.sessions.get(sessionKey);
    const head = session?.records[session.start];
    if (!session || !head) return;
    session.lease = undefined;
    head.nextAttemptAt = at;
    this.schedule(session);
  }

  /** The leases held now (a rebuild of the indexes carries them over). */
  leases(): Array<{ sessionKey: string; lease: { token: number; until: number } }> {
    const out: Array<{ sessionKey: string; lease: { token: number; until: number } }> = [];
    for (const session of this.sessions.values())
      if (session.lease) out.push({ sessionKey: session.sessionKey, lease: { ...session.lease } });
    return out;
  }

  /** Hold a lease taken before a rebuild, when its session still has a head: its pusher's ack stays valid. */
  adopt(sessionKey: string, lease: { token: number; until: number }): void {
    const session = this.sessions.get(sessionKey);
    if (!session || session.lease || session.start >= session.records.length) return;
    session.lease = lease;
    this.schedule(session);
  }

  /** Earliest due time of a head not leased, or earliest lease expiry. */
  nextDue(): number | undefined {
    return this.heap.peek()?.at;
  }

  private session(sessionKey: string): SessionQueue {
    let session = this.sessions.get(sessionKey);
    if (!session) {
      session = { sessionKey, records: [], start: 0, lease: undefined, stamp: 0 };
      this.sessions.set(sessionKey, session);
    }
    return session;
  }

  private schedule(session: SessionQueue): void {
    session.stamp = ++this.stamp;
    const head = session.records[session.start] as QueuedRecord;
    this.heap.push({
      at: session.lease ? session.lease.until : head.nextAttemptAt,
      stamp: session.stamp,
      key: session.sessionKey,
    });
  }
}
