// Worker client entry (`agent-intake/client`): claims and the event stream of a running service,
// over HTTP, with Node's own fetch. Imports nothing of the service but its output shapes.

export { claims, type Claim, type ClaimsOptions, type AckOptions, type NackOptions } from './client/claims.js';
export {
  events,
  type EventsOptions,
  type EventStream,
  type StreamEvent,
  type OutputEvent,
  type GapEvent,
} from './client/events.js';
export type { ConnectionOptions, ClientClock } from './client/connection.js';
export { ClientError, isClientError } from './client/errors.js';
export type { Output, OutputOf, OutputType, ProcessedMessage, ProcessedEvent } from './events/output.js';
export type { BackoffRange } from './core/backoff.js';
