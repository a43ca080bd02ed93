import type { ClaimLease, OutboxRecord, PushLease, PushOutcome } from '../../core/ports/index.js';
import type { PushQueue } from './push-queue.js';
import type { Rows } from './rows.js';

/**
 * The deliveries of a store owned by one process: the push queue's records pushed or claimed,
 * their outcomes and dead letters, over the store's rows (the queue itself is an index of them).
 */
export class Deliveries {
  constructor(
    private readonly rows: Rows,
    private readonly pushes: PushQueue,
    /** Dead records already in the rows. */
    private dead: number,
    private readonly nextToken: () => number,
  ) {}

  claimPush(now: number, leaseMs: number, limit: number): PushLease[] {
    return this.pushes.claim(now, leaseMs, limit, this.nextToken).map(({ seq, token, leaseUntil }) => ({
      record: this.rows.handOut(this.rows.record(seq) as OutboxRecord),
      token,
      leaseUntil,
    }));
  }

  /** Claims (§15): as claimPush, each record's attempt counted in the same step. */
  claimOutputs(now: number, leaseMs: number, limit: number): ClaimLease[] {
    return this.pushes.claim(now, leaseMs, limit, this.nextToken).map(({ seq, token, leaseUntil, expired }) => {
      const record = this.rows.record(seq) as OutboxRecord;
      record.attempts++;
      record.updatedAt = now;
      this.rows.recordSaved(record);
      return { record: this.rows.handOut(record), token, leaseUntil, expired };
    });
  }

  extendClaim(lease: PushLease, leaseUntil: number, now: number): boolean {
    return this.pushes.extend(lease.record.sessionKey, lease.record.seq, lease.token, leaseUntil, now);
  }

  /** The lease on record `seq` of `sessionKey`, when it is the session's leased head. */
  leaseOn(sessionKey: string, seq: number): { token: number; leaseUntil: number } | undefined {
    const lease = this.pushes.leaseOn(sessionKey, seq);
    return lease && { token: lease.token, leaseUntil: lease.until };
  }

  ackPush(lease: PushLease, outcome: PushOutcome, now: number): boolean {
    const { sessionKey, seq } = lease.record;
    const record = this.pushes.leased(sessionKey, seq, lease.token) && this.rows.record(seq);
    if (!record) return false;
    record.attempts = outcome.attempts;
    record.updatedAt = now;
    if (outcome.state === 'retry') {
      record.nextAttemptAt = outcome.at;
      record.lastError = outcome.lastError;
      this.rows.recordSaved(record);
      this.pushes.retry(sessionKey, outcome.at);
      return true;
    }
    record.state = outcome.state;
    // Cleared, not deleted: a store keeps its record object (see the memory store's `Kept`).
    record.nextAttemptAt = undefined;
    record.lastError = outcome.state === 'dead' ? outcome.lastError : undefined;
    this.rows.recordSaved(record);
    this.pushes.finish(sessionKey);
    if (outcome.state === 'dead') this.dead++;
    return true;
  }

  /** Only records dead at this moment move (the condition is read inside the write). */
  requeueDead(id: string | undefined, limit: number, now: number): number {
    const records = this.rows.deadRecords(id, id === undefined ? limit : 1);
    for (const record of records) {
      // lastError stays: it tells why the record died, until a new attempt says otherwise.
      record.state = 'pending';
      record.attempts = 0;
      record.updatedAt = now;
      record.nextAttemptAt = now;
      this.rows.recordSaved(record);
      this.pushes.insert(record.sessionKey, { seq: record.seq, nextAttemptAt: now });
      this.dead--;
    }
    return records.length;
  }

  deliveryCounts(): { pending: number; dead: number } {
    return { pending: this.pushes.size, dead: this.dead };
  }
}
