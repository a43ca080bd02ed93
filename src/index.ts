// Library entry. Grouped by audience: embedding the service, its data shapes, extending it.

// Embedding
export { createIntake, type Intake, type CreateIntakeOptions } from './service/intake.js';
export { loadConfig } from './service/configure.js';
export { envSettings } from './config/load.js';
export type { Config, ChannelConfig } from './config/schema.js';

// Data shapes
export type { ProcessedMessage, ProcessedEvent, Output } from './events/output.js';
export type { MessagePart, Quote, ReplyHandle, ReplyValue } from './events/reply.js';
export { OUTPUT_SCHEMA_VERSION } from './events/reply.js';
export type {
  MediaItem,
  MediaFailure,
  InboundEvent,
  Segment,
  MediaRef,
  EventKind,
  BotRef,
  CorrelationRecord,
  Delivery,
} from './events/inbound.js';
export type { Verdict, TraceEntry } from './events/trace.js';
export type { Handler } from './handlers/routes.js';
export type { IngestSummary } from './ingest/admit.js';
export type { RawDelivery, PlatformReply } from './events/transport.js';

// Extending and operating
export type { Store, StoreOptions, TurnDone, TurnView, TurnMode, TurnRule } from './core/ports/index.js';
export { MemoryStore } from './store/local/memory.js';
export { SqliteStore } from './store/sqlite/sqlite.js';
export { RedisStore, type RedisStoreOptions } from './store/redis/redis.js';
export { ShardedRedisStore, type ShardedStoreOptions } from './store/redis/sharded.js';
export type { Clock, ClockInput } from './core/clock.js';
export {
  IntakeError,
  ConfigError,
  RequestError,
  SignatureError,
  StaleTimestampError,
  UnavailableError,
  isIntakeError,
  isConfigError,
  isSignatureError,
  type ErrorCode,
} from './core/errors.js';
export { standardWebhooks } from './core/signing.js';
