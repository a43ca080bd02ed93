import type { AdmissionStore } from './admission-store.js';
import type { Budgets } from './budgets.js';
import type { Claims } from './claims.js';
import type { Conversations } from './conversations.js';
import type { DebounceBuffers } from './debounce-buffers.js';
import type { Leases } from './leases.js';
import type { Outbox } from './outbox.js';
import type { PushQueue } from './push-queue.js';
import type { SharedInstances } from './shared-instances.js';
import type { SharedValues } from './shared-values.js';
import type { StoreOperations } from './store-operations.js';
import type { Turns } from './turns.js';

/*
 * The store port: one file per role, each consumer taking the one it uses (docs/stores.md lists
 * them; test/core/ports.test.ts keeps that list and this sum the same). `DebounceBuffers` and
 * `Outbox` extend the narrower `BufferLeases` and `OutboxReader` that the flush scheduler and
 * the event stream take.
 */
export type {
  AdmissionStore,
  AdmitItem,
  AdmitVerdict,
  BufferRule,
  ClaimSpec,
  CorrelationStep,
} from './admission-store.js';
export type { BufferLeases, FlushReason, LeasedBatch, LeasedConversation } from './buffer-leases.js';
export type { DebounceBuffers, TurnCommit } from './debounce-buffers.js';
export type { Turns } from './turns.js';
export type {
  ActivationModes,
  ContextKeep,
  ConversationRead,
  Conversations,
  Revised,
  RevisionKeep,
  TakeoverChange,
  TakeoverHold,
} from './conversations.js';
export type { BudgetAnswer, BudgetSpend, Budgets } from './budgets.js';
export type { OutboxLife, OutboxReader, TailEvents } from './outbox-reader.js';
export type { Outbox } from './outbox.js';
export type { PushLease, PushOutcome, PushQueue } from './push-queue.js';
export type { ClaimLease, ClaimView, Claims } from './claims.js';
export type { Leases } from './leases.js';
export type { SharedValues } from './shared-values.js';
export type { ClaimStats, StoreHealth, StoreOperations } from './store-operations.js';
export type { SharedInstances } from './shared-instances.js';

// The shapes the roles take and give.
export type { DeliveryState, OutboxDraft, OutboxRecord } from './outbox-record.js';
export { outboxRecord } from './outbox-record.js';
export type { InstanceBus, InstanceCounters, RelayAnswer, RelayedAction } from './bus.js';
export type { TrailLog, TrailLogOptions } from '../../events/trace.js';
export type { TurnDone, TurnLink, TurnMode, TurnRule, TurnView } from '../../events/turn.js';
export { budgetBufferKey, isBudgetBuffer, isTurnBuffer, turnBufferKey } from '../../events/turn.js';

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
export interface Store
  extends
    AdmissionStore,
    DebounceBuffers,
    Turns,
    Conversations,
    Budgets,
    Outbox,
    PushQueue,
    Claims,
    Leases,
    SharedValues,
    StoreOperations,
    SharedInstances {}

/** Settings every store takes at open. */
export interface StoreOptions {
  /** Cap on live correlation groups; the oldest are evicted (and counted) past it. @default 4096 */
  maxCorrelationGroups?: number;
  /** The opener's clock: what expired while the store was closed is dropped against it. @default Date.now() */
  now?: number;
}
