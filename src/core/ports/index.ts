import type { BufferedPart, CorrelationRecord, Delivery, EventKind } from '../../events/inbound.js';
import type { OutboxDraft, OutboxRecord } from '../../events/outbox-record.js';
import type { InstanceBus } from '../../events/bus.js';
export type { InstanceBus, InstanceCounters, RelayAnswer, RelayedAction } from '../../events/bus.js';
import type { TurnLink, TurnRule, Turns } from '../../events/turn.js';
import type { OutboxLife, StoreHealth, TailEvents } from '../../events/store.js';
import type { TrailLog, TrailLogOptions } from '../../events/trace.js';
export type { OutboxLife, StoreHealth, TailEvents, TrailLog, TrailLogOptions };

/**
 * Admission: what one webhook delivery records, in one atomic step, and the correlation group
 * a later notice looks up.
 */
export interface AdmissionStore {
  /**
   * Record one webhook delivery, all its events in one atomic step: for each item, in order,
   * correlation (when `correlation` is set), then its claims, then (when everything is new)
   * append `part` to the buffer `part.debounceKey` and compute that buffer's deadline. Items
   * refused by correlation or a claim change nothing. Resolves only once durable.
   */
  admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]>;
  /** The live correlation group of a key (the notice participants after a hold), if any. */
  correlation(key: string, now: number): Promise<CorrelationRecord | undefined>;
}

/**
 * Buffers with owners, as the flush scheduler (src/debounce/scheduler.ts) drives them: take
 * what is due under a lease, keep the lease alive, give it back after a failure, and know
 * when to look again.
 */
export interface BufferLeases {
  /**
   * Take up to `limit` buffers whose deadline is at or before `now`, oldest deadline first,
   * at most one per session (`sessionKey`) in flight: a session whose earlier buffer is still
   * leased waits. Each gets a fresh fencing token and a lease until `now + leaseMs`; a buffer
   * whose lease ran out (its owner died) is due again and is taken over the same way.
   * `now = Infinity` takes every buffer (shutdown of a store no one else shares).
   */
  claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]>;
  /** Keep a lease alive while a slow flush (media) runs; false when the fence is stale. */
  renewLease(batch: LeasedBatch, now: number, leaseMs: number): Promise<boolean>;
  /** Give a lease back after a failed flush: the buffer is due again at `retryAt`. */
  release(batch: LeasedBatch, retryAt: number): Promise<void>;
  /** Earliest deadline of a buffer not leased, for the local timer (undefined: none). */
  nextDeadline(): Promise<number | undefined>;
}

/**
 * The debounce buffers whole: their leases, plus the commit that ends a lease with an output
 * (the emit stage) and the count of open buffers (stats).
 */
export interface DebounceBuffers extends BufferLeases {
  /**
   * Move a leased batch to the outbox in one step: remove its parts, assign the next global
   * seq, append `draft`, queue it for push when `draft.state` is `pending`, release the
   * session, and re-arm the buffer from parts that arrived meanwhile. A stale fence (the lease
   * was lost and another owner took the buffer) changes nothing and resolves `undefined`.
   */
  commit(batch: LeasedBatch, draft: OutboxDraft, now: number): Promise<OutboxRecord | undefined>;
  /** Open buffers (not yet committed) in the whole store. */
  openBuffers(): Promise<number>;
  /**
   * `commit` under the session's turn, in the same one step (docs/turns.md, rules/turn.ts): held,
   * or emitted with its link spliced at the end of `draft.body`. Stale fence: `undefined`. With
   * `rule.mode` off it is `commit` unless the session has held messages (they go first).
   */
  commitTurn(batch: LeasedBatch, draft: OutboxDraft, now: number, rule: TurnRule): Promise<TurnCommit | undefined>;
}

/**
 * The outbox as a stream reads it: replay from a seq, then follow live
 * (src/http/event-stream.ts).
 */
export interface OutboxReader {
  /** Outbox records with seq greater than `seq`, oldest first. */
  outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]>;
  /** The highest seq ever assigned (0 when none): a resume point past it is from another store. */
  lastSeq(): Promise<number>;
  /**
   * The life of this outbox's seqs, carried in event stream ids so that a consumer's position
   * from before the store lost data is told from one in the seqs assigned since. A store that
   * cannot assign a seq twice may leave it out (its stream ids are plain seqs).
   */
  life?(): Promise<OutboxLife>;
  /**
   * Every record committed from now on, in seq order, from any instance. Returns the
   * unsubscribe function. Memory and SQLite call back synchronously inside `commit`; a shared
   * store may also tell `events` of what its followers cannot see by themselves.
   */
  tail(listener: (record: OutboxRecord) => void, events?: TailEvents): () => void;
  /** Keep the records after `afterSeq` from any instance's trim until `now + forMs` (a cut stream's; Redis only). */
  keepUnread?(afterSeq: number, forMs: number, now: number): Promise<void>;
}

/** The outbox: what streams read, plus lookup by id (HTTP, traces) and the retention trim. */
export interface Outbox extends OutboxReader {
  outboxGet(id: string): Promise<OutboxRecord | undefined>;
  /**
   * Drop records older than `olderThan` or beyond the newest `keepCount`, never one still
   * `pending` or `dead`, nor one with seq greater than `keepAfterSeq` (a stream has not read it)
   * or than a live `keepUnread` hold (at `now`, the caller's clock).
   */
  trimOutbox(olderThan: number, keepCount: number, keepAfterSeq: number, now?: number): Promise<number>;
}

/**
 * The push queue to the agent, one record in flight per session, and its dead letters
 * (src/push/agent-push.ts).
 */
export interface PushQueue {
  /**
   * Take up to `limit` records to push: for each session, only its oldest pending record, and
   * only when that record is due (`nextAttemptAt <= now`) and no other pusher holds it.
   * Each gets a token and a lease until `now + leaseMs`; an expired lease is taken over.
   * Records carry their body (loaded now, not kept in memory while waiting).
   */
  claimPush(now: number, leaseMs: number, limit: number): Promise<PushLease[]>;
  /**
   * Record the outcome of an attempt. `delivered` and `dead` end the record's turn and let the
   * session's next record go; `retry` keeps it at the head of its session, due at `at`.
   * A stale token (the lease was lost) changes nothing and resolves false.
   */
  ackPush(lease: PushLease, outcome: PushOutcome, now: number): Promise<boolean>;
  /** When the earliest scheduled (not leased) pending record is due (undefined: none). */
  nextPushAt(): Promise<number | undefined>;
  /** Cluster-wide counts of undelivered and dead records (backpressure, stats, metrics). */
  deliveryCounts(): Promise<{ pending: number; dead: number }>;
  /** Records whose push exhausted its retries, oldest first. */
  deadLetters(limit: number): Promise<OutboxRecord[]>;
  /**
   * Put dead letters back in their sessions' queues (one by id, or up to `limit` oldest),
   * conditionally: a record that is no longer dead is not counted. Returns how many moved.
   */
  requeueDead(id: string | undefined, limit: number, now: number): Promise<number>;
}

/**
 * Named leases: what only one instance may hold at a time (a channel's outgoing connection,
 * src/connections/lease-keeper.ts). Memory and SQLite hold them for this process; Redis for
 * every instance on it.
 */
export interface Leases {
  /**
   * Take the lease `name` for `holder` until `now + ttlMs`, or renew it when `holder` has it.
   * Resolves its fencing token, which grows each time the lease changes hands; undefined while
   * another holder's lease is live.
   */
  holdLease(name: string, holder: string, ttlMs: number, now: number): Promise<number | undefined>;
  /** Give the lease back when `holder` still has it, so another instance can take it at once. */
  dropLease(name: string, holder: string): Promise<void>;
  /** True while the lease `name` still has `fence`: it has not changed hands since that holder took it. */
  fenceHolds(name: string, fence: number): Promise<boolean>;
  /**
   * `sharedPut` fenced by a lease: stores `value` under `key` only while the lease `name` still
   * has `fence`, in one step. False, and nothing written, once the lease changed hands (a late
   * holder's cursor never overwrites its successor's).
   */
  fencedPut(name: string, fence: number, key: string, value: string, ttlMs: number, now: number): Promise<boolean>;
}

/**
 * Short-lived values every instance may use, kept in the store so one fetch serves them all
 * (a platform's API access token: WeChat's, Feishu's tenant token). Memory and SQLite keep them
 * in this process; Redis as keys with a TTL.
 */
export interface SharedValues {
  /** The value stored under `name`, while it lives. */
  sharedGet(name: string, now: number): Promise<string | undefined>;
  /** Store `value` under `name` until `now + ttlMs`. */
  sharedPut(name: string, value: string, ttlMs: number, now: number): Promise<void>;
}

/** What the composition asks of a store as a running thing: its nature, stats, readiness, end. */
export interface StoreOperations {
  /** `memory`, `sqlite`, `redis` or `redis-cluster`. */
  readonly kind: string;
  /** False when a restart loses everything (the memory store). */
  readonly durable: boolean;
  /** True when other instances may own buffers and pushes in this store (Redis). */
  readonly shared: boolean;
  /**
   * Claim counts for stats: live keys, keys evicted by the cap (all spaces), and evictions by
   * claim space (`id:<channel>`: exact ids dropped before their window ended).
   */
  claimStats(): ClaimStats;
  /** Live correlation groups and groups evicted past `maxCorrelationGroups` (this instance's view may lag). */
  correlationStats(): { groups: number; evicted: number };
  /** Throws when ingest could not record now (readiness answers 503 exactly then). */
  ping(): Promise<void>;
  /**
   * Look again at what the store's own checks watch (Redis: that it was not reset, its
   * eviction policy), for stats and metrics; absent when there is nothing to watch.
   */
  health?(): Promise<StoreHealth>;
  close(): Promise<void>;
}

/**
 * The store behind every stage: correlation groups, dedup claims, debounce buffers, the
 * outbox and the push queue, one role each. Every method keeps its meaning when several
 * instances share one store (the Redis store): state lives here, never only in a process, and
 * every hand-over between instances goes through a lease with a fencing token.
 *
 * Times are milliseconds. `now` arguments come from the caller's clock for the memory and
 * SQLite stores; a shared store may use its own clock instead (Redis `TIME`), so callers must
 * treat the deadlines it returns as the truth.
 */
export interface Store extends AdmissionStore, DebounceBuffers, Outbox, PushQueue, Leases, SharedValues, Turns, StoreOperations {
  /** How instances sharing this store reach each other; absent when one process is the whole deployment. */
  readonly bus?: InstanceBus;
  /** The trail every instance on this store shares (Redis); absent when one process is the whole deployment. */
  openTrail?(options: TrailLogOptions): TrailLog;
}

export interface ClaimStats {
  keys: number;
  evicted: number;
  evictedBySpace: Readonly<Record<string, number>>;
}

/** Settings every store takes at open. */
export interface StoreOptions {
  /** Cap on live correlation groups; the oldest are evicted (and counted) past it. @default 4096 */
  maxCorrelationGroups?: number;
  /** The opener's clock: what expired while the store was closed is dropped against it. @default Date.now() */
  now?: number;
}

/** A dedup claim: `key` is taken for `ttlMs`; a second claim inside that time fails. */
export interface ClaimSpec {
  /** Already-hashed key, unique across spaces (see dedup/claims.ts). */
  key: string;
  /** Groups keys that share one TTL, so expiry is first-in first-out. */
  space: string;
  ttlMs: number;
  /** Cap on live keys in the space; the oldest are evicted (and counted) past it. */
  maxKeys: number;
}

/** How a buffer closes: the debounce options of the part's channel, resolved by the caller. */
export interface BufferRule {
  windowMs: number;
  maxWaitMs: number;
  maxMessages: number;
}

/** The correlation step of one event (only in namespaces where several bots deliver: several channels, or one that carries several bots). */
export interface CorrelationStep {
  key: string;
  kind: EventKind;
  /** The group lives this long from its first delivery. */
  windowMs: number;
  /** Platform time of the event, seconds; notices farther apart than `toleranceS` are new events. */
  time: number;
  toleranceS: number;
  /** This delivery: same channel+bot with the same platform id (or any notice) is a retry. */
  delivery: Delivery;
}

export interface AdmitItem {
  correlation?: CorrelationStep;
  /** Claimed in order; the index of a taken one is returned. */
  claims: readonly ClaimSpec[];
  /** The part to buffer; the store assigns `part.id` (unique per store, growing). */
  part: Omit<BufferedPart, 'id'>;
  rule: BufferRule;
  /** Counts once toward `maxMessages` per distinct value (an album); default: the part itself. */
  unit?: string;
  /** Close the buffer now, with this part last (a command). */
  closeNow: boolean;
}

export type AdmitVerdict =
  | { verdict: 'accepted'; partId: string; deadline: number; correlation?: CorrelationRecord }
  /** A claim was taken: `claim` is its index in `AdmitItem.claims`. */
  | { verdict: 'claimed'; claim: number }
  /** Correlation: `retry` when the same bot delivered it again, else another bot's copy. */
  | { verdict: 'correlated'; retry: boolean; correlation: CorrelationRecord };

/** A closed buffer, leased to one flusher. */
export interface LeasedBatch {
  debounceKey: string;
  sessionKey: string;
  /** The parts taken, in arrival order; later arrivals stay for the next batch. */
  parts: BufferedPart[];
  fence: number;
  leaseUntil: number;
  reason: FlushReason;
}

export type FlushReason = 'window' | 'count' | 'max_wait' | 'command' | 'shutdown' | 'takeover' | 'turn' | 'max_held';

// Agent turns (docs/turns.md): the shapes are in events/turn.ts; what `commitTurn` did is here.
export type { TurnDone, TurnLink, TurnMode, TurnRule, Turns, TurnView } from '../../events/turn.js';
export { isTurnBuffer, turnBufferKey } from '../../events/turn.js';
export type TurnCommit = { held: false; record: OutboxRecord; link?: TurnLink } | { held: true; by: string; until: number; count: number };

export interface PushLease {
  record: OutboxRecord;
  token: number;
  leaseUntil: number;
}

export type PushOutcome =
  | { state: 'delivered'; attempts: number }
  | { state: 'retry'; attempts: number; at: number; lastError: string }
  | { state: 'dead'; attempts: number; lastError: string };

// The outbox record, the store's shape of an output: events/outbox-record.ts.
export type { DeliveryState, OutboxDraft, OutboxRecord } from '../../events/outbox-record.js';
export { outboxRecord } from '../../events/outbox-record.js';
