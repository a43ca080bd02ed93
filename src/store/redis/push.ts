import type { OutboxRecord, PushLease, PushOutcome, PushQueue } from '../../core/ports/index.js';
import { clock, numberOrUndefined, recordOf } from './codec.js';
import type { ScriptedRedis } from './connections.js';
import { claimPushReply, entriesReply } from './replies.js';

/**
 * The push queue on Redis (lua/include/entry.lua lists its keys): a list of seqs per session,
 * each session's head scheduled in `ready`, one script per step.
 */
export class RedisPushQueue implements PushQueue {
  constructor(
    private readonly client: ScriptedRedis,
    private readonly prefix: string,
  ) {}

  async claimPush(now: number, leaseMs: number, limit: number): Promise<PushLease[]> {
    const reply = claimPushReply(await this.client.aiClaimPush(this.prefix, clock(now), leaseMs, limit));
    return reply.map(([entry, token, leaseUntil]) => ({ record: recordOf(entry), token, leaseUntil }));
  }

  async ackPush(lease: PushLease, outcome: PushOutcome, now: number): Promise<boolean> {
    const at = outcome.state === 'retry' ? Math.floor(outcome.at) : '-';
    const lastError = outcome.state === 'delivered' ? '' : outcome.lastError;
    const acked = await this.client.aiAckPush(
      this.prefix,
      lease.record.sessionKey,
      lease.record.seq,
      lease.token,
      outcome.state,
      outcome.attempts,
      at,
      lastError,
      clock(now),
    );
    return acked === 1;
  }

  async nextPushAt(): Promise<number | undefined> {
    return numberOrUndefined(await this.client.aiEarliest(this.prefix, 'ready', 'pl:', ''));
  }

  async deliveryCounts(): Promise<{ pending: number; dead: number }> {
    const replies = await this.client.multi().zcard(`${this.prefix}undelivered`).zcard(`${this.prefix}dead`).exec();
    const [undelivered, dead] = (replies ?? []).map(([error, count]) => {
      if (error) throw error;
      return Number(count);
    }) as [number, number];
    return { pending: undelivered - dead, dead };
  }

  async deadLetters(limit: number): Promise<OutboxRecord[]> {
    if (limit <= 0) return [];
    return entriesReply(await this.client.aiRead(this.prefix, 'dead', Math.min(limit, 10_000))).map(recordOf);
  }

  async requeueDead(id: string | undefined, limit: number, now: number): Promise<number> {
    const bounded = Math.min(Number.isFinite(limit) ? limit : 1000, 1000);
    return Number(await this.client.aiRequeueDead(this.prefix, id ?? '', bounded, clock(now)));
  }
}
