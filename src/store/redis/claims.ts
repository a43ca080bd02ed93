import type { ClaimLease, Claims, ClaimView, PushLease } from '../../core/ports/index.js';
import { clock, recordOf } from './codec.js';
import type { ScriptedRedis } from './connections.js';
import { claimOfReply, claimOutputsReply } from './replies.js';

/**
 * Claims (contract §15) on the push queue's keys (push.ts, lua/include/entry.lua): a claim is a
 * push lease whose key outlives its end (lua/include/claim-lease.lua), its attempt counted in
 * the record's delivery state by the same script that takes it; acks and nacks are `ackPush`.
 */
export class RedisClaims implements Claims {
  constructor(
    private readonly client: ScriptedRedis,
    private readonly prefix: string,
  ) {}

  async claimOutputs(now: number, leaseMs: number, limit: number): Promise<ClaimLease[]> {
    const reply = claimOutputsReply(await this.client.aiClaimOutputs(this.prefix, clock(now), leaseMs, limit));
    return reply.map(([entry, token, leaseUntil, expired]) => ({
      record: recordOf(entry),
      token,
      leaseUntil,
      expired,
    }));
  }

  async extendClaim(lease: PushLease, leaseUntil: number, now: number): Promise<boolean> {
    const { sessionKey, seq } = lease.record;
    const extended = await this.client.aiExtendClaim(
      this.prefix,
      sessionKey,
      seq,
      lease.token,
      Math.floor(leaseUntil),
      clock(now),
    );
    return extended === 1;
  }

  async claimOf(id: string): Promise<ClaimView | undefined> {
    const reply = claimOfReply(await this.client.aiClaimOf(this.prefix, id));
    if (!reply) return undefined;
    const [entry, lease] = reply;
    return lease ? { record: recordOf(entry), lease } : { record: recordOf(entry) };
  }
}
