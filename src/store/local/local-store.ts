import type { CorrelationRecord } from '../../events/inbound.js';
import { fenceHolds, leaseAfter, type LeaseRow } from '../rules/lease.js';
import type { LocalState } from './local-state.js';
import type { ContextMessage, ConversationState, Revision, Takeover } from '../../events/context.js';
import type {
  ActivationModes,
  AdmitItem,
  AdmitVerdict,
  BudgetAnswer,
  BudgetSpend,
  ClaimStats,
  ContextKeep,
  ConversationRead,
  LeasedBatch,
  OutboxDraft,
  OutboxLife,
  OutboxRecord,
  ClaimLease,
  ClaimView,
  PushLease,
  PushOutcome,
  Revised,
  RevisionKeep,
  Store,
  TakeoverChange,
  TakeoverHold,
  TurnCommit,
  TurnDone,
  TurnRule,
  TurnView,
} from '../../core/ports/index.js';

/** The record a commit's write made, to announce: a plain commit's, or an emitted turn commit's. */
export function committedRecord(value: unknown): OutboxRecord | undefined {
  if (!value) return undefined;
  if (typeof (value as TurnCommit).held !== 'boolean') return value as OutboxRecord;
  const turn = value as TurnCommit;
  return turn.held ? undefined : turn.record;
}

/** What a write does, so a store can order and announce it: an admission, a batch's commit, or another change. */
export type WriteKind = 'admit' | 'commit' | 'other';

/**
 * The stores owned by one process (memory, SQLite): every role of `Store` is the same
 * `LocalState` behind it, and a backend says only how a change is written (`write`), what a
 * call checks first (`use`) and how its outbox is read and trimmed.
 */
/** Shared values held before the memory store first forgets expired ones. */
const SWEEP_VALUES_FROM = 64;
/** The most shared values a store of one process keeps (a few hundred bytes each). */
export const MAX_SHARED_VALUES = 250_000;

export abstract class LocalStore implements Store {
  abstract readonly kind: string;
  abstract readonly durable: boolean;
  readonly shared = false;
  /** Set by the backend's constructor (and replaced when SQLite rebuilds it from its rows). */
  protected state!: LocalState;
  /** The latest `now` seen, for stats (and SQLite's rebuilds) that take no clock. */
  protected now = 0;
  protected closed = false;
  private readonly listeners = new Set<(record: OutboxRecord) => void>();
  /** Named leases: this process is the whole deployment, so they live in memory (a restart ends them). */
  private readonly leases = new Map<string, LeaseRow>();
  /** Shared values (access tokens, the messages our bots sent): this process's, like the leases. */
  private readonly values = new Map<string, { value: string; until: number }>();
  /** The size at which `sharedPut` next forgets expired values: twice what the last sweep kept, so the work is constant per put. */
  private sweepValuesAt = SWEEP_VALUES_FROM;

  /** Run one change of `state` and answer once it is as durable as this store makes anything. */
  protected abstract write<T>(run: () => T, kind?: WriteKind): Promise<T>;

  /** Checks before any call (a closed store, a replaced file); `now` advances the store's clock. */
  protected use(now?: number): void {
    if (now !== undefined && now > this.now && now !== Infinity) this.now = now;
  }

  /** The change a commit makes (SQLite also remembers the lease it ended). */
  protected committing(batch: LeasedBatch, draft: OutboxDraft, now: number): OutboxRecord | undefined {
    return this.state.commit(batch, draft, now);
  }

  async admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
    this.use(now);
    return this.write(() => this.state.admit(items, now), 'admit');
  }

  async correlation(key: string, now: number): Promise<CorrelationRecord | undefined> {
    this.use(now);
    return this.state.correlation(key, now);
  }

  async claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]> {
    this.use(now);
    // Leases live in memory only: one process owns these rows, and a restart ends every lease.
    return this.state.claimDue(now, leaseMs, limit);
  }

  async renewLease(batch: LeasedBatch, now: number, leaseMs: number): Promise<boolean> {
    this.use(now);
    return this.state.renewLease(batch, now, leaseMs);
  }

  async commit(batch: LeasedBatch, draft: OutboxDraft, now: number): Promise<OutboxRecord | undefined> {
    this.use(now);
    return this.write(() => this.committing(batch, draft, now), 'commit');
  }

  /** The change a turn commit makes (SQLite also remembers the lease it ended). */
  protected committingTurn(
    batch: LeasedBatch,
    draft: OutboxDraft,
    now: number,
    rule: TurnRule,
  ): TurnCommit | undefined {
    return this.state.commitTurn(batch, draft, now, rule);
  }

  async commitTurn(
    batch: LeasedBatch,
    draft: OutboxDraft,
    now: number,
    rule: TurnRule,
  ): Promise<TurnCommit | undefined> {
    this.use(now);
    return this.write(() => this.committingTurn(batch, draft, now, rule), 'commit');
  }

  async conversation(sessionKey: string, now: number, read?: ConversationRead): Promise<ConversationState> {
    this.use(now);
    return this.state.rows.conversation(sessionKey, now, read?.context !== false);
  }

  /** The change keeping a batch as context makes (SQLite also remembers the lease it ended). */
  protected keepingContext(
    batch: LeasedBatch,
    messages: readonly ContextMessage[],
    now: number,
    keep: ContextKeep,
  ): boolean {
    return this.state.keepContext(batch, messages, now, keep);
  }

  async keepContext(
    batch: LeasedBatch,
    messages: readonly ContextMessage[],
    now: number,
    keep: ContextKeep,
  ): Promise<boolean> {
    this.use(now);
    return this.write(() => this.keepingContext(batch, messages, now, keep));
  }

  async spendBudgets(budgets: readonly BudgetSpend[], now: number): Promise<BudgetAnswer> {
    this.use(now);
    return this.write(() => this.state.spendBudgets(budgets, now));
  }

  /** The change deferring a batch makes (SQLite also remembers the lease it ended). */
  protected deferring(batch: LeasedBatch, deferKey: string, dueAt: number, now: number): boolean {
    return this.state.deferBatch(batch, deferKey, dueAt, now);
  }

  async deferBatch(batch: LeasedBatch, deferKey: string, dueAt: number, now: number): Promise<boolean> {
    this.use(now);
    return this.write(() => this.deferring(batch, deferKey, dueAt, now));
  }

  async setActivation(sessionKey: string, override: ActivationModes | undefined, now: number): Promise<void> {
    this.use(now);
    return this.write(() => this.state.rows.activationSaved(sessionKey, override));
  }

  /** The change a revision makes (SQLite also remembers the leases it broke). */
  protected revising(
    sessionKey: string,
    debounceKeys: readonly string[],
    revision: Revision,
    now: number,
    keep: RevisionKeep,
  ): Revised {
    return this.state.revise(sessionKey, debounceKeys, revision, now, keep);
  }

  async revise(
    sessionKey: string,
    debounceKeys: readonly string[],
    revision: Revision,
    now: number,
    keep: RevisionKeep,
  ): Promise<Revised> {
    this.use(now);
    return this.write(() => this.revising(sessionKey, debounceKeys, revision, now, keep));
  }

  async holdTakeover(sessionKey: string, at: number, hold: TakeoverHold, now: number): Promise<TakeoverChange> {
    this.use(now);
    return this.write(() => this.state.rows.takeoverHeld(sessionKey, at, hold, now));
  }

  async endTakeover(sessionKey: string, now: number, since?: number): Promise<Takeover | undefined> {
    this.use(now);
    return this.write(() => this.state.rows.takeoverEnded(sessionKey, now, since));
  }

  async turnDone(outputId: string, now: number): Promise<TurnDone> {
    this.use(now);
    return this.write(() => this.state.turnDone(outputId, now));
  }

  async turnOf(sessionKey: string, now: number): Promise<TurnView> {
    this.use(now);
    return this.state.turnOf(sessionKey, now);
  }

  async openTurnCount(now: number): Promise<number> {
    this.use(now);
    return this.state.openTurnCount(now);
  }

  async openTurns(now: number, limit: number): Promise<TurnView[]> {
    this.use(now);
    return this.state.openTurns(now, limit);
  }

  async release(batch: LeasedBatch, retryAt: number): Promise<void> {
    this.use();
    return this.write(() => this.state.release(batch, retryAt));
  }

  async holdForTyping(
    debounceKey: string,
    _sessionKey: string,
    untilAt: number,
    now: number,
  ): Promise<number | undefined> {
    this.use(now);
    // Deadlines are never written: a restart re-arms each buffer from its parts (SQLite),
    // so a hold of a few seconds ends with the process, as the window it extends would.
    return this.state.buffers.holdForTyping(debounceKey, untilAt);
  }

  async nextDeadline(): Promise<number | undefined> {
    return this.state.buffers.nextDue();
  }

  async openBuffers(): Promise<number> {
    return this.state.buffers.size;
  }

  tail(listener: (record: OutboxRecord) => void): () => void {
    // A wrapper, so one listener subscribed twice is called twice and unsubscribed once each.
    const wrapped = (record: OutboxRecord): void => listener(record);
    this.listeners.add(wrapped);
    return () => this.listeners.delete(wrapped);
  }

  /** A committed record goes to every tail listener, each with a copy of its own. */
  protected announce(record: OutboxRecord): void {
    for (const listener of this.listeners) {
      try {
        listener({ ...record });
      } catch {
        // A listener's failure is its own; the record is committed either way.
      }
    }
  }

  async claimPush(now: number, leaseMs: number, limit: number): Promise<PushLease[]> {
    this.use(now);
    return this.state.deliveries.claimPush(now, leaseMs, limit);
  }

  async ackPush(lease: PushLease, outcome: PushOutcome, now: number): Promise<boolean> {
    this.use(now);
    return this.write(() => this.state.deliveries.ackPush(lease, outcome, now));
  }

  async claimOutputs(now: number, leaseMs: number, limit: number): Promise<ClaimLease[]> {
    this.use(now);
    return this.write(() => this.state.deliveries.claimOutputs(now, leaseMs, limit));
  }

  async extendClaim(lease: PushLease, leaseUntil: number, now: number): Promise<boolean> {
    this.use(now);
    return this.state.deliveries.extendClaim(lease, leaseUntil, now);
  }

  async claimOf(id: string): Promise<ClaimView | undefined> {
    const record = await this.outboxGet(id);
    if (!record) return undefined;
    const lease = this.state.deliveries.leaseOn(record.sessionKey, record.seq);
    return lease ? { record, lease } : { record };
  }

  async nextPushAt(): Promise<number | undefined> {
    return this.state.pushes.nextDue();
  }

  async deliveryCounts(): Promise<{ pending: number; dead: number }> {
    return this.state.deliveries.deliveryCounts();
  }

  async requeueDead(id: string | undefined, limit: number, now: number): Promise<number> {
    this.use(now);
    // Each call reads which records are dead inside its own write: two calls never move one twice.
    return this.write(() => this.state.deliveries.requeueDead(id, limit, now));
  }

  async holdLease(name: string, holder: string, ttlMs: number, now: number): Promise<number | undefined> {
    this.use(now);
    const row = leaseAfter(this.leases.get(name), holder, ttlMs, now);
    if (row) this.leases.set(name, row);
    return row?.fence;
  }

  async dropLease(name: string, holder: string): Promise<void> {
    const row = this.leases.get(name);
    if (row?.holder === holder) row.until = 0;
  }

  async fenceHolds(name: string, fence: number): Promise<boolean> {
    return fenceHolds(this.leases.get(name), fence);
  }

  async fencedPut(
    name: string,
    fence: number,
    key: string,
    value: string,
    ttlMs: number,
    now: number,
  ): Promise<boolean> {
    // Checked and queued in one turn: a takeover in this process comes before or after, whole.
    if (!fenceHolds(this.leases.get(name), fence)) return false;
    await this.sharedPut(key, value, ttlMs, now);
    return true;
  }

  async sharedGet(name: string, now: number): Promise<string | undefined> {
    const kept = this.values.get(name);
    if (kept && kept.until > now) return kept.value;
    this.values.delete(name);
    return undefined;
  }

  async sharedPut(name: string, value: string, ttlMs: number, now: number): Promise<void> {
    this.values.set(name, { value, until: now + ttlMs });
    // Past the cap the oldest written go first, expired or not: a busy process remembers the
    // newest MAX_SHARED_VALUES (the messages our bots sent, the takeovers' marks). A sixteenth
    // at a time: a Map's iterator steps over every entry deleted since its table was last
    // rebuilt, so dropping one key per insert would walk them all again on every insert.
    if (this.values.size > MAX_SHARED_VALUES) {
      const keep = MAX_SHARED_VALUES - (MAX_SHARED_VALUES >> 4);
      for (const key of this.values.keys()) {
        this.values.delete(key);
        if (this.values.size <= keep) break;
      }
    }
    // A value per message our bots sent, most never read again: expired ones go as new ones come.
    if (this.values.size < this.sweepValuesAt) return;
    for (const [key, kept] of this.values) if (kept.until <= now) this.values.delete(key);
    this.sweepValuesAt = Math.max(SWEEP_VALUES_FROM, 2 * this.values.size);
  }

  claimStats(): ClaimStats {
    return this.state.claims.stats();
  }

  correlationStats(): { groups: number; evicted: number } {
    return this.state.correlationStats(this.now);
  }

  abstract outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]>;
  abstract outboxGet(id: string): Promise<OutboxRecord | undefined>;
  abstract lastSeq(): Promise<number>;
  abstract life(): Promise<OutboxLife>;
  abstract trimOutbox(olderThan: number, keepCount: number, keepAfterSeq: number): Promise<number>;
  abstract deadLetters(limit: number): Promise<OutboxRecord[]>;
  abstract ping(): Promise<void>;
  abstract close(): Promise<void>;
}
