import type { Logger } from 'pino';
import { backoffMs } from '../core/backoff.js';
import type { Clock } from '../core/clock.js';
import { counted, RequestError, UnavailableError } from '../core/errors.js';
import type {
  ClaimLease,
  Claims,
  OutboxReader,
  OutboxRecord,
  PushLease,
  PushOutcome,
  PushQueue,
} from '../core/ports/index.js';
import { claimIdOf, claimLost, parseClaimId } from './claim-id.js';
import { DeliveryCounts } from './counts.js';
import { ClaimPolls } from './polls.js';

/** Longest a lease that ran out, or a nack's retry that came due, waits for a poll to find it. */
const RECHECK_MS = 1_000;
/** Claims kept as outstanding past which a claim first drops those run out. */
const OUTSTANDING_PRUNE_AT = 10_000;

export interface OutputClaimsOptions {
  /** `agent.claims`. */
  config: { leaseMs: number; maxAttempts: number };
  /** `agent.minBackoffMs` / `maxBackoffMs`: a nack without `retryAfterMs` waits as a failed push would. */
  backoff: { minBackoffMs: number; maxBackoffMs: number };
  /** `agent.maxPending`: past it ingest is refused (backpressure), as with a push. */
  maxPending: number;
  /** The store's claims and push queue roles, and its tail (outputs committed on other instances). */
  store: Claims &
    Pick<PushQueue, 'ackPush' | 'nextPushAt' | 'deliveryCounts' | 'requeueDead'> &
    Pick<OutboxReader, 'tail'>;
  clock: Clock;
  logger: Logger;
  /** Polls waiting at once; past it a poll is refused (503), so the connections stay for acks and webhooks. */
  maxPolls: number;
  /** Jitter source, 0 <= x < 1. @default Math.random */
  random?: () => number;
  /** Every recorded outcome (metrics, the verdict trail), as a push attempt's. */
  onOutcome(record: OutboxRecord, outcome: PushOutcome): void;
  /** An output claimed for its first time, `waitedMs` after its commit. */
  onFirstClaim?(waitedMs: number): void;
  /** On a store other instances share: how often the delivery counts are read again. @default never */
  refreshMs?: number;
  /** Agent turns: an ack closes the output's turn unless the worker keeps it open. */
  turns?: { on(channel: string): boolean; done(outputId: string, channel: string): Promise<unknown> };
}

/** An output handed to a worker under a lease. */
export interface Claim {
  id: string;
  record: OutboxRecord;
  attempt: number;
  /** The lease's fencing token (in the id too). */
  token: number;
  leaseUntil: number;
}

/** What a nack asks: a retry after `retryAfterMs` (default: the push's backoff), `error` as the reason. */
export interface NackRequest {
  retryAfterMs?: number;
  error?: string;
}

/**
 * Agent workers pull outputs (`POST /v1/claims`) instead of a push. The queue is the push's,
 * in the store: a session has one output out at a time, in seq order, sessions go in parallel,
 * and any instance answers for any claim (its id carries the output, the attempt and the
 * lease's fencing token). A claim uses up one of `maxAttempts` when it is taken, so a worker
 * that vanishes costs an attempt; a lease that runs out offers the output again; past
 * `maxAttempts` the output is a dead letter, requeued as a push's is.
 */
export class OutputClaims {
  private readonly polls: ClaimPolls<Claim>;
  private readonly random: () => number;
  /** Claims this instance handed out, not yet answered: their lease's token and end. */
  private readonly outstanding = new Map<string, { token: number; leaseUntil: number }>();
  private untail: (() => void) | undefined;
  /** Leases that ran out before their output was claimed again (counted here, where the claim took it). */
  expired = 0;
  private readonly counts: DeliveryCounts;

  constructor(private readonly options: OutputClaimsOptions) {
    this.random = options.random ?? Math.random;
    const { store, clock, refreshMs } = options;
    this.counts = new DeliveryCounts({ store, clock, ...(refreshMs === undefined ? {} : { refreshMs }) });
    this.polls = new ClaimPolls<Claim>({
      clock: options.clock,
      logger: options.logger,
      max: options.maxPolls,
      take: (max) => this.claim(max),
      next: () => options.store.nextPushAt(),
      recheckMs: RECHECK_MS,
      // A poll whose client went away before its answer: its claims are offered again now.
      giveBack: (claims) => this.giveBack(claims),
    });
  }

  get config(): { leaseMs: number; maxAttempts: number } {
    return this.options.config;
  }

  async start(): Promise<void> {
    await this.counts.start();
    // An output another instance committed wakes the polls here (memory and SQLite tell their own commits too).
    this.untail = this.options.store.tail(() => this.polls.wake());
  }

  /** An output was committed on this instance. */
  added(): void {
    this.counts.pending++;
    this.polls.wake();
  }

  /** Whether ingest should refuse new deliveries (backpressure). */
  get saturated(): boolean {
    return this.counts.pending >= this.options.maxPending;
  }

  /** Undelivered and dead records in the store (read again now and then, counted between). */
  get pending(): number {
    return this.counts.pending;
  }

  get dead(): number {
    return this.counts.dead;
  }

  /** Polls waiting now. */
  get waiting(): number {
    return this.polls.size;
  }

  /** Claims handed out by this instance whose lease has not run out and that were not answered. */
  outstandingCount(): number {
    const now = this.options.clock.now();
    for (const [id, lease] of this.outstanding) if (lease.leaseUntil < now) this.outstanding.delete(id);
    return this.outstanding.size;
  }

  /** Read the cluster-wide counts again. */
  refresh(): Promise<void> {
    return this.counts.refresh();
  }

  /**
   * Up to `max` outputs, as soon as one is there, or none after `waitMs` (at once while the
   * service stops). `signal`: the client went away; claims it would have had are offered again.
   */
  async take(max: number, waitMs: number, signal?: AbortSignal): Promise<Claim[]> {
    const taken = await unreachable(this.polls.take(max, waitMs, signal), 'nothing was claimed');
    if (taken === 'full')
      throw new UnavailableError(
        'too_many_polls',
        `Too many claim polls wait on this instance (${this.polls.size}; at most ${this.options.maxPolls}, half of server.maxConnections); retry later, or raise server.maxConnections`,
        1,
      );
    return taken;
  }

  /** The worker is done with the output: delivered; with turns on, its turn closes unless `keepTurn`. */
  async ack(id: string, keepTurn: boolean): Promise<{ already: boolean }> {
    const held = await this.holder(id, 'ack');
    if (held === 'already') return { already: true };
    const { record } = held;
    try {
      await this.settle(held, { state: 'delivered', attempts: record.attempts });
    } catch (error) {
      // The same ack sent to two instances at once (a worker's retry racing its first): the
      // store took the other one, and this claim is delivered all the same.
      if (error instanceof RequestError && (await this.holder(id, 'ack').catch(() => undefined)) === 'already')
        return { already: true };
      throw error;
    }
    const { turns, logger } = this.options;
    if (!keepTurn && turns && record.type === 'chat.processedMessage' && turns.on(record.channel)) {
      await turns.done(record.id, record.channel).catch((error: unknown) => {
        logger.warn(
          { err: error, id: record.id },
          "the worker's ack could not close its turn; it closes at turns.maxMs",
        );
      });
    }
    return { already: false };
  }

  /** The worker gives the output back: offered again after a wait, or a dead letter on its last attempt. */
  async nack(id: string, request: NackRequest): Promise<{ state: 'pending'; retryAt: number } | { state: 'dead' }> {
    const held = await this.holder(id, 'nack');
    const attempts = held.record.attempts;
    const lastError = request.error ?? `nacked ${counted(attempts, 'time')}`;
    if (attempts >= this.options.config.maxAttempts) {
      await this.settle(held, { state: 'dead', attempts, lastError });
      return { state: 'dead' };
    }
    const at = this.options.clock.now() + (request.retryAfterMs ?? this.backoff(attempts));
    await this.settle(held, { state: 'retry', attempts, at, lastError });
    return { state: 'pending', retryAt: at };
  }

  /** The worker needs longer: the lease ends `leaseMs` from now, within `leaseMs` x `maxAttempts` of the claim's start. */
  async extend(id: string, leaseMs: number): Promise<{ leaseUntil: number }> {
    const { leaseMs: lease, maxAttempts } = this.options.config;
    const total = lease * maxAttempts;
    if (!Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > total)
      throw new RequestError(
        'bad_lease',
        400,
        `leaseMs must be a whole number from 1 to ${total} (agent.claims.leaseMs x maxAttempts); got ${JSON.stringify(leaseMs)}`,
      );
    const held = await this.holder(id, 'extend');
    const now = this.options.clock.now();
    // The claim took the record at its `updatedAt` (each claim writes it).
    const start = held.record.updatedAt;
    const until = now + leaseMs;
    if (until - start > total)
      throw new RequestError(
        'bad_lease',
        400,
        `A claim's lease ends at most ${total} ms (agent.claims.leaseMs x maxAttempts) after the claim was taken (${new Date(start).toISOString()}): ${until - start} ms asked; ack or nack it`,
      );
    if (!(await unreachable(this.options.store.extendClaim(held, until, now), `claim "${id}" was not extended`)))
      throw claimLost(id);
    const leaseUntil = Math.max(until, held.leaseUntil);
    if (this.outstanding.has(held.record.id)) this.outstanding.set(held.record.id, { token: held.token, leaseUntil });
    return { leaseUntil };
  }

  /** The claim on output `id` while its lease runs (undefined: none). */
  async claimed(id: string): Promise<{ attempt: number; leaseUntil: number } | undefined> {
    const view = await this.options.store.claimOf(id);
    if (!view?.lease || view.lease.leaseUntil < this.options.clock.now()) return undefined;
    return { attempt: view.record.attempts, leaseUntil: view.lease.leaseUntil };
  }

  /** Offer dead letters again: one by id, or up to `limit` oldest. Returns how many were re-queued. */
  async retryDead(id: string | undefined, limit: number): Promise<number> {
    const moved = await this.options.store.requeueDead(id, limit, this.options.clock.now());
    await this.refresh().catch(() => undefined);
    this.polls.wake();
    return moved;
  }

  /** The service is stopping: waiting polls answer none now, new ones at once. */
  drain(): void {
    this.polls.drain();
  }

  close(): void {
    this.counts.close();
    this.polls.close();
    this.untail?.();
  }

  /**
   * Take up to `max` records: each counted as an attempt; one whose leases all ran out is a dead
   * letter instead, and its session's next record is looked for in its place.
   */
  private async claim(max: number): Promise<Claim[]> {
    const { store, config, clock } = this.options;
    const claims: Claim[] = [];
    // Claims answered elsewhere or run out leave the map at a scrape; without scrapes, here.
    if (this.outstanding.size > OUTSTANDING_PRUNE_AT) this.outstandingCount();
    for (;;) {
      const now = clock.now();
      const leases = await store.claimOutputs(now, config.leaseMs, max - claims.length);
      let buried = 0;
      for (const lease of leases) {
        const { record } = lease;
        if (lease.expired) this.expired++;
        if (record.attempts > config.maxAttempts) {
          await this.bury(lease);
          buried++;
          continue;
        }
        if (record.attempts === 1) this.options.onFirstClaim?.(now - record.createdAt);
        this.outstanding.set(record.id, { token: lease.token, leaseUntil: lease.leaseUntil });
        claims.push({
          id: claimIdOf(record.id, record.attempts, lease.token),
          record,
          attempt: record.attempts,
          token: lease.token,
          leaseUntil: lease.leaseUntil,
        });
      }
      if (buried === 0 || claims.length >= max) return claims;
    }
  }

  /** Every lease on this record ran out: it goes to dead letters rather than to a worker. */
  private async bury(lease: ClaimLease): Promise<void> {
    const attempts = lease.record.attempts - 1;
    const outcome: PushOutcome = { state: 'dead', attempts, lastError: `lease ran out ${counted(attempts, 'time')}` };
    if (!(await this.options.store.ackPush(lease, outcome, this.options.clock.now()))) return;
    this.counted(lease.record, outcome);
    this.options.logger.error(
      { channel: lease.record.channel, id: lease.record.id, attempts },
      'no worker answered a claim of this output in time; it moved to dead letters',
    );
    this.polls.wake();
  }

  /** Claims taken for a client that went away: the attempt is not counted, the output is due now. */
  private async giveBack(claims: readonly Claim[]): Promise<void> {
    const now = this.options.clock.now();
    for (const claim of claims) {
      const lease: PushLease = { record: claim.record, token: claim.token, leaseUntil: claim.leaseUntil };
      const outcome: PushOutcome = {
        state: 'retry',
        attempts: claim.attempt - 1,
        at: now,
        lastError: claim.record.lastError ?? 'claimed by a poll whose client went away before the answer',
      };
      await this.options.store.ackPush(lease, outcome, now).catch(() => false);
      this.outstanding.delete(claim.record.id);
    }
    this.polls.wake();
  }

  /**
   * The claim `id` names, while its lease holds: the record and the lease. `already`: an ack of
   * a claim acked before (the second ack of a worker that lost the first answer).
   */
  private async holder(id: string, action: 'ack'): Promise<PushLease | 'already'>;
  private async holder(id: string, action: 'nack' | 'extend'): Promise<PushLease>;
  private async holder(id: string, action: 'ack' | 'nack' | 'extend'): Promise<PushLease | 'already'> {
    const parsed = parseClaimId(id);
    const view = await unreachable(this.options.store.claimOf(parsed.outputId), `claim "${id}" was not answered`);
    if (!view)
      throw new RequestError(
        'unknown_claim',
        404,
        `No output "${parsed.outputId}" is retained (never emitted, or older than events.retentionMs): claim "${id}" is unknown`,
      );
    const { record, lease } = view;
    if (record.state === 'delivered' && record.attempts === parsed.attempt) {
      if (action === 'ack') return 'already';
      throw new RequestError(
        'claim_lost',
        409,
        `Claim "${id}" was acked: output ${record.id} is delivered, there is nothing to ${action}`,
      );
    }
    if (!lease || lease.token !== parsed.token || lease.leaseUntil < this.options.clock.now()) {
      this.outstanding.delete(record.id);
      throw claimLost(id);
    }
    return { record, token: lease.token, leaseUntil: lease.leaseUntil };
  }

  /** Record an outcome under the claim's lease; a lease lost meanwhile is a 409. */
  private async settle(held: PushLease, outcome: PushOutcome): Promise<void> {
    const { record } = held;
    const id = claimIdOf(record.id, record.attempts, held.token);
    const now = this.options.clock.now();
    if (!(await unreachable(this.options.store.ackPush(held, outcome, now), `claim "${id}" was not answered`)))
      throw claimLost(id);
    this.outstanding.delete(record.id);
    this.counted(record, outcome);
    // The session's next output, or this one retried, may be claimed now.
    this.polls.wake();
  }

  private counted(record: OutboxRecord, outcome: PushOutcome): void {
    this.counts.counted(outcome);
    this.options.onOutcome(record, outcome);
  }

  /** The push's backoff for a failed attempt: 1x to 2x `minBackoffMs * 2^(n-1)`, at most `maxBackoffMs`. */
  private backoff(attempts: number): number {
    const { minBackoffMs, maxBackoffMs } = this.options.backoff;
    return Math.min(
      maxBackoffMs,
      backoffMs(attempts - 1, { minMs: 2 * minBackoffMs, maxMs: 2 * maxBackoffMs }, this.random),
    );
  }
}

/** A store that failed a step answers 503 (retry later), never a 500. */
async function unreachable<T>(step: Promise<T>, outcome: string): Promise<T> {
  try {
    return await step;
  } catch (error) {
    throw new UnavailableError('store_unavailable', `The store is unreachable; ${outcome}, retry later`, 5, {
      cause: error,
    });
  }
}
