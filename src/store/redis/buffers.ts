import {
  isTurnBuffer,
  outboxRecord,
  type LeasedBatch,
  type OutboxDraft,
  type OutboxRecord,
  type TurnCommit,
  type TurnRule,
} from '../../core/ports/index.js';
import { clock, numberOrUndefined } from './codec.js';
import type { CommitBatcher } from './commits.js';
import type { ConnectionLogger, ScriptedRedis } from './connections.js';
import { claimedBatches } from './evicted.js';
import type { StoreIdentity } from './identity.js';
import { committedDespiteLostAnswer } from './lost-answer.js';
import type { ReplicaWaits } from './replicas.js';
import { claimDueReply, type ClaimReply } from './replies.js';
import type { OutboxTail } from './tail.js';
import type { RedisTurns } from './turns.js';

/** After a failed flush its buffer holds the session this long past the retry time (then another instance may take over). */
const RELEASE_HOLD_MS = 30_000;
/** A claim undone after its answer was lost stays refused this long (a resend by the client after a reconnect). */
const UNCLAIMED_KEEP_MS = 3_600_000;
/** Claims whose answer was lost, remembered for their undo (beyond this, the oldest wait out their lease). */
const MAX_UNANSWERED = 1000;
/** Outputs whose shared values wait for their commit (beyond this, the oldest are forgotten). */
const MAX_WAITING_VALUES = 10_000;

/** Shared values an output's commit writes (`putWithCommit`). */
interface WaitingValues {
  entries: ReadonlyArray<readonly [string, string]>;
  ttlMs: number;
}

/** What the buffers' life cycle works with, owned by the store. */
export interface BufferParts {
  redis: ScriptedRedis;
  prefix: string;
  /** Compare deadlines and leases with the caller's `now`, not the server's clock. */
  callerClock: boolean;
  /** Unique to this store object: its claim tokens start with it. */
  claimPrefix: string;
  tailer: OutboxTail;
  identity: StoreIdentity;
  commits: CommitBatcher;
  replicas: ReplicaWaits;
  turns: RedisTurns;
  /** The outbox record of an output id (the shard's own, or the global outbox's). */
  recorded: (id: string) => Promise<OutboxRecord | undefined>;
  logger: ConnectionLogger | undefined;
}

/**
 * Debounce buffers with owners: claimed when due under a lease, renewed, committed into the
 * outbox (once, whatever answer was lost on the way) or released for a retry.
 */
export class RedisBuffers {
  private claims = 0;
  /** Claim tokens whose answer never came, undone before the next claim. */
  private readonly unanswered: string[] = [];
  /** By output id: the shared values its commit writes first. */
  private readonly waiting = new Map<string, WaitingValues>();

  constructor(private readonly parts: BufferParts) {}

  /**
   * Take due buffers under a claim token. A claim whose answer is lost (Redis ran it, then the
   * command timed out or the connection dropped) leased buffers no one here knows of: the next
   * claim first undoes it by its token, so they are due again at once instead of waiting out
   * their lease. The undo goes ahead of the claim on the same connection, without holding it up.
   */
  async claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]> {
    const { redis, prefix, logger } = this.parts;
    for (const lost of this.unanswered.splice(0)) {
      redis.aiUnclaim(prefix, lost, UNCLAIMED_KEEP_MS).catch(() => this.unanswer(lost));
    }
    const token = `${this.parts.claimPrefix}${++this.claims}`;
    let reply: ClaimReply;
    try {
      // Due by the server's clock, the one admission stamps deadlines with: an instance whose
      // clock runs ahead must not take buffers early (and one behind takes them a little late,
      // or another instance does). now = Infinity would mean "now" here too.
      // The sessions' conversations come with the batches, read by the caller's clock as
      // `conversation` reads them (conversations.ts).
      reply = claimDueReply(await redis.aiClaimDue(prefix, this.serverOr(now), leaseMs, limit, token, clock(now)));
    } catch (error) {
      this.unanswer(token);
      throw error;
    }
    return claimedBatches(reply, redis, prefix, logger);
  }

  async renewLease(batch: LeasedBatch, now: number, leaseMs: number): Promise<boolean> {
    const { debounceKey, sessionKey, fence } = batch;
    const renewed = await this.parts.redis.aiRenew(
      this.parts.prefix,
      debounceKey,
      sessionKey,
      fence,
      this.serverOr(now),
      leaseMs,
    );
    return renewed === 1;
  }

  /** Commit a batch; a commit that ran but whose answer was lost answers with its record (see lost-answer.ts). */
  commit(batch: LeasedBatch, draft: OutboxDraft, now: number): Promise<OutboxRecord | undefined> {
    return committedDespiteLostAnswer(
      async () => (await this.commitOnce(batch, draft, now)) as OutboxRecord | undefined,
      () => this.parts.recorded(draft.id),
      this.parts.logger,
      batch.sessionKey,
    );
  }

  /**
   * The shared values the commit of output `outputId` writes ahead of its record: in its script
   * call, not a call each. A flush that never commits leaves them to be forgotten.
   */
  putWithCommit(outputId: string, entries: ReadonlyArray<readonly [string, string]>, ttlMs: number): void {
    this.waiting.delete(outputId);
    this.waiting.set(outputId, { entries, ttlMs });
    if (this.waiting.size > MAX_WAITING_VALUES) this.waiting.delete(this.waiting.keys().next().value as string);
  }

  /** Agent turns: one script each (turns.ts). */
  async commitTurn(
    batch: LeasedBatch,
    draft: OutboxDraft,
    now: number,
    rule: TurnRule,
  ): Promise<TurnCommit | undefined> {
    const { turns } = this.parts;
    if (rule.mode !== 'off' || isTurnBuffer(batch.debounceKey)) {
      // commit-turn.lua takes no shared values: they go first on the same connection.
      await this.putWaiting(draft.id).catch((error: unknown) =>
        this.parts.logger?.warn({ err: error, id: draft.id }, 'Redis store: emitted ids not remembered'),
      );
      return turns.commit(batch, draft, now, rule);
    }
    // Turns off: the plain commit, unless the session has held messages (held before a restart
    // that turned turns off): then the turn commit, which puts this batch behind them.
    let held = false;
    const record = await committedDespiteLostAnswer(
      async () => {
        const reply = await this.commitOnce(batch, draft, now, true);
        held = reply === 'held';
        return reply === 'held' ? undefined : reply;
      },
      () => (held ? Promise.resolve(undefined) : this.parts.recorded(draft.id)),
      this.parts.logger,
      batch.sessionKey,
    );
    if (held) return turns.commit(batch, draft, now, rule);
    return record && { held: false, record };
  }

  async release(batch: LeasedBatch, retryAt: number): Promise<void> {
    // The session stays held until the retry, plus a lease in case this instance dies meanwhile.
    const { debounceKey, sessionKey, fence } = batch;
    await this.parts.redis.aiRelease(
      this.parts.prefix,
      debounceKey,
      sessionKey,
      fence,
      Math.floor(retryAt),
      RELEASE_HOLD_MS,
    );
  }

  /** `untilAt - now` after the script's now: the server's clock unless the store runs on its caller's. */
  async holdForTyping(debounceKey: string, untilAt: number, now: number): Promise<number | undefined> {
    const holdMs = Math.max(0, Math.floor(untilAt - now));
    return numberOrUndefined(
      await this.parts.redis.aiHoldTyping(this.parts.prefix, debounceKey, holdMs, this.serverOr(now)),
    );
  }

  async nextDeadline(): Promise<number | undefined> {
    return numberOrUndefined(await this.parts.redis.aiEarliest(this.parts.prefix, 'due', 'bm:', 'fence'));
  }

  /** `unlessHeld`: refused ('held') when the session has held messages (turns off, see `commitTurn`). */
  private async commitOnce(
    batch: LeasedBatch,
    draft: OutboxDraft,
    now: number,
    unlessHeld?: true,
  ): Promise<OutboxRecord | undefined | 'held'> {
    const { tailer, identity, commits, replicas, redis } = this.parts;
    await tailer.ready;
    const mark = identity.mark();
    // The record is the draft without contextUpTo: the script clears the context up to it.
    const { contextUpTo, ...stored } = draft;
    const values = this.waiting.get(draft.id);
    this.waiting.delete(draft.id);
    const reply = await commits.commit([
      batch.debounceKey,
      batch.sessionKey,
      batch.fence,
      batch.parts.length,
      clock(now),
      draft.id,
      draft.sessionKey,
      Math.floor(draft.createdAt),
      draft.state,
      JSON.stringify(stored),
      unlessHeld ? 'turns' : '',
      contextUpTo === undefined ? '' : String(contextUpTo),
      Math.max(1, Math.floor(values?.ttlMs ?? 1)),
      values?.entries.length ?? 0,
      ...(values?.entries.flat() ?? []),
    ]);
    if (!reply || reply === 'held') return reply ?? undefined;
    const [seq, at] = reply;
    identity.committed(seq, mark, redis);
    await replicas.held(redis);
    return outboxRecord(draft, seq, 0, draft.createdAt, draft.state === 'pending' ? at : undefined);
  }

  /** The shared values waiting for output `outputId`'s commit, written now, one SET each. */
  private async putWaiting(outputId: string): Promise<void> {
    const values = this.waiting.get(outputId);
    if (!values) return;
    this.waiting.delete(outputId);
    const { redis, prefix } = this.parts;
    const ttlMs = Math.max(1, Math.floor(values.ttlMs));
    await Promise.all(values.entries.map(([name, value]) => redis.set(`${prefix}val:${name}`, value, 'PX', ttlMs)));
  }

  /** The time a script compares deadlines and leases with: the server's ('') unless the store runs on its caller's clock. */
  private serverOr(now: number): string {
    return this.parts.callerClock ? clock(now) : '';
  }

  /** Remember a claim whose answer never came, for its undo (the oldest go past MAX_UNANSWERED). */
  private unanswer(token: string): void {
    if (this.unanswered.push(token) > MAX_UNANSWERED) this.unanswered.shift();
  }
}
