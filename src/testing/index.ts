// Test kit entry (`agent-intake/testing`): the store contract suite any Store implementation can
// run under vitest (an optional peer dependency), and the builders its tests use. Never imported
// by the service itself.

export { describeCloseRules, describeStoreContract, describeTurnRules } from './store/contract.js';
export { closeCases } from './store/close-cases.js';
export type { ContractOptions, OpenStore, ReopenStore } from './store/harness.js';
export {
  accepted,
  claim,
  delivery,
  draft,
  event,
  item,
  rule,
  step,
  verdicts,
  type ItemOptions,
} from './store/fixtures.js';

// Store, its roles and the shapes they take and give (src/core/ports/), for an implementation written against the kit.
export type {
  Store,
  StoreOptions,
  AdmissionStore,
  BufferLeases,
  DebounceBuffers,
  Turns,
  Conversations,
  ActivationModes,
  ContextKeep,
  Budgets,
  BudgetAnswer,
  BudgetSpend,
  OutboxReader,
  Outbox,
  PushQueue,
  Claims,
  ClaimLease,
  ClaimView,
  Leases,
  SharedValues,
  StoreOperations,
  SharedInstances,
  ClaimStats,
  StoreHealth,
  OutboxLife,
  TailEvents,
  AdmitItem,
  AdmitVerdict,
  BufferRule,
  ClaimSpec,
  CorrelationStep,
  LeasedBatch,
  FlushReason,
  PushLease,
  PushOutcome,
  DeliveryState,
  OutboxDraft,
  OutboxRecord,
  TurnCommit,
  TurnDone,
  TurnLink,
  TurnMode,
  TurnRule,
  TurnView,
} from '../core/ports/index.js';
export { budgetBufferKey, turnBufferKey } from '../core/ports/index.js';
export { arrive, release, turnRule } from './store/turns.js';
export { contextMessage } from './store/conversations.js';
export type { ContextMessage, ConversationState, KeptMessage } from '../events/context.js';
export type { BufferedPart, CorrelationRecord, Delivery, EventKind, InboundEvent } from '../events/inbound.js';
