/** What instances sharing a store (Redis) tell each other: their connections, and relayed actions. */
import type { ErrorCode } from '../errors.js';
import type { ConnectionView } from '../../events/connection.js';

/** An action relayed to the instance holding a bot's socket (`POST /v1/channels/<id>/actions/<action>`). */
export interface RelayedAction {
  channel: string;
  action: string;
  params: Record<string, unknown>;
  botId?: string;
}

/** The answer of a relayed action: the bot's response, or the error the holding instance answered. */
export type RelayAnswer = { ok: true; body: unknown } | { ok: false; status: number; code: ErrorCode; message: string };

/**
 * What instances sharing a store tell each other (Redis only): the connections each holds,
 * and actions for the bots on another instance's sockets.
 */
export interface InstanceBus {
  /** Publish this instance's connections, kept until `now + ttlMs` unless published again. */
  shareConnections(instance: string, views: readonly ConnectionView[], ttlMs: number, now: number): Promise<void>;
  /** Every instance's published connections that have not expired. */
  sharedConnections(now: number): Promise<ConnectionView[]>;
  /** Publish this instance's counters (`/v1/stats`), kept live until `now + ttlMs` unless published again. */
  shareCounters(counters: InstanceCounters, ttlMs: number, now: number): Promise<void>;
  /** Every instance's published counters, live or not (a stopped instance's for an hour after its last). */
  sharedCounters(now: number): Promise<InstanceCounters[]>;
  /** Take the actions relayed to `instance`; resolves once listening. Returns the stop function. */
  serveActions(instance: string, serve: (action: RelayedAction) => Promise<RelayAnswer>): Promise<() => void>;
  /**
   * Relay an action to `instance` and wait up to `timeoutMs` for its answer: `unheard` when no
   * instance received the relay (that instance is gone), undefined when no answer came in time.
   */
  relayAction(instance: string, action: RelayedAction, timeoutMs: number): Promise<RelayAnswer | 'unheard' | undefined>;
}

/** What one instance counted since it started (`/v1/stats`), as every instance on a shared store sees it. */
export interface InstanceCounters {
  instance: string;
  /** When it was published (or read, for the instance answering). */
  at: number;
  /** False once the instance stopped publishing (stopped or unreachable): its counts still add up. */
  live: boolean;
  /** Per channel, per action (received, deduped, emitted, ...). */
  channels: Record<string, Record<string, number>>;
  correlator: { observed: number; duplicates: number };
  /** Event streams open on it, and buffers it is flushing. */
  streams: number;
  flushing: number;
}
