/** What instances sharing a store (Redis) tell each other: their connections, and relayed actions. */
import type { ConnectionView } from './connection.js';

/** An action relayed to the instance holding a bot's socket (`POST /v1/channels/<id>/actions/<action>`). */
export interface RelayedAction {
  channel: string;
  action: string;
  params: Record<string, unknown>;
  botId?: string;
}

/** The answer of a relayed action: the bot's response, or the error the holding instance answered. */
export type RelayAnswer =
  | { ok: true; body: unknown }
  | { ok: false; status: number; code: string; message: string };

/**
 * What instances sharing a store tell each other (Redis only): the connections each holds,
 * and actions for the bots on another instance's sockets.
 */
export interface InstanceBus {
  /** Publish this instance's connections, kept until `now + ttlMs` unless published again. */
  shareConnections(instance: string, views: readonly ConnectionView[], ttlMs: number, now: number): Promise<void>;
  /** Every instance's published connections that have not expired. */
  sharedConnections(now: number): Promise<ConnectionView[]>;
  /** Take the actions relayed to `instance`; resolves once listening. Returns the stop function. */
  serveActions(instance: string, serve: (action: RelayedAction) => Promise<RelayAnswer>): Promise<() => void>;
  /**
   * Relay an action to `instance` and wait up to `timeoutMs` for its answer: `unheard` when no
   * instance received the relay (that instance is gone), undefined when no answer came in time.
   */
  relayAction(instance: string, action: RelayedAction, timeoutMs: number): Promise<RelayAnswer | 'unheard' | undefined>;
}
