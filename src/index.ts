// Library entry. Grouped by audience: embedding the service, its data shapes, extending it.

// Embedding
export { createIntake, type Intake, type CreateIntakeOptions } from './intake.js';
export { loadConfig, envSettings } from './config/load.js';
export type { Config, ChannelConfig } from './config/schema.js';

// Data shapes
export type { ProcessedMessage, ProcessedEvent, Output, MediaItem, MediaFailure } from './emit/output.js';
export type { InboundEvent, Segment, MediaRef, EventKind, BotRef } from './events.js';
export type { CorrelationRecord, Delivery } from './correlate/correlator.js';
export type { Handler } from './handlers/routes.js';
export type { IngestSummary, Verdict } from './pipeline.js';

// Extending and operating
export type { Store } from './store/types.js';
export { MemoryStore } from './store/memory.js';
export { SqliteStore } from './store/sqlite.js';
export type { Clock } from './clock.js';
export { IntakeError, ConfigError, RequestError, SignatureError, UnavailableError, isIntakeError, isConfigError, isSignatureError } from './errors.js';
export { standardWebhooks } from './signing.js';
