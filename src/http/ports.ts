import type Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { IntakeError } from '../core/errors.js';
import type { ActivationModes, OutboxRecord, Outbox, TurnDone, TurnView } from '../core/ports/index.js';
import type { PlatformReply, RawDelivery } from '../events/transport.js';
import type { ConnectionView } from '../events/connection.js';
import type { TraceTrail } from '../events/trace.js';
import type { Takeover } from '../events/context.js';
import type { StreamHub } from './event-stream.js';

/** The narrow ports the HTTP surface talks to; the composition (src/service/intake.ts) provides them. */
export interface HttpPorts {
  config: Config;
  logger: Logger;
  now(): number;
  /** The configured channels, as a webhook URL meets them. */
  channels: WebhookChannels;
  /** The pipeline's `inbound`: verify, normalize and record one delivery; resolves once everything in it is recorded. */
  ingest(channel: string, delivery: RawDelivery): Promise<PlatformReply>;
  /** Count and log a delivery refused before it reached the pipeline (its type, its size). */
  rejected(channel: string, error: unknown): void;
  /** Reasons the service should not get traffic now (empty when ready). */
  readiness(): Promise<string[]>;
  stats(): Promise<Record<string, unknown>>;
  metrics: { readonly contentType: string; metrics(): Promise<string> };
  /** The store's outbox role: streams, lookup by id. */
  outbox: Outbox;
  streams: StreamHub;
  /** The bot connections: the deployment's (`GET /v1/connections`), and actions through them. */
  sockets: {
    list(): Promise<ConnectionView[]>;
    /** Run an action through a connected bot; resolves with its answer (`POST /v1/channels/:id/actions/:action`). */
    action(
      channel: string,
      action: string,
      params: Record<string, unknown>,
      selfId: string | undefined,
    ): Promise<unknown>;
  };
  /** The verdict trail (`/v1/activity`): this process's, or every instance's on a shared store. */
  trail: Pick<TraceTrail, 'shared' | 'life' | 'last' | 'after' | 'subscribe'>;
  /** What happened to one message (undefined: nothing known). */
  trace(id: string): Promise<object | undefined>;
  /** Dead letters, when push to the agent is configured. */
  deadLetters:
    | {
        count(): Promise<number>;
        list(limit: number): Promise<OutboxRecord[]>;
        retry(id: string | undefined, limit: number): Promise<number>;
      }
    | undefined;
  /** Agent workers pulling outputs (`/v1/claims`), when `agent.claims` is set (src/claims/). */
  claims: ClaimsPort | undefined;
  /** Agent turns (docs/turns.md): close one by its output id, read a session's. */
  turns: {
    done(outputId: string): Promise<TurnDone>;
    of(sessionKey: string): Promise<TurnView>;
  };
  /** Conversations (contract §12): a session's run-time activation override and what it keeps as context. */
  conversations: {
    view(sessionKey: string): Promise<object>;
    setActivation(sessionKey: string, modes: ActivationModes | undefined): Promise<void>;
  };
  /** A human taking a session over (contract §13): read, start (for `holdMs`, within takeover.maxMs) and end it by hand. */
  takeovers: {
    /** The session's takeover, `active` while its end is to come. */
    view(sessionKey: string): Promise<(Takeover & { active: boolean }) | undefined>;
    start(sessionKey: string, holdMs: number): Promise<Takeover>;
    end(sessionKey: string): Promise<Takeover | undefined>;
  };
  /** Extra routes (the operator console), mounted after the API. */
  extra?: (router: Router, requireToken: Koa.Middleware) => void;
}

/** What the claims routes ask of the claims stage; ids and bodies are parsed by the routes. */
export interface ClaimsPort {
  /** Up to `max` claims as soon as one is there, or none after `waitMs`; `signal`: the client went away. */
  take(max: number, waitMs: number, signal: AbortSignal): Promise<ClaimTaken[]>;
  ack(id: string, keepTurn: boolean): Promise<{ already: boolean }>;
  nack(
    id: string,
    request: { retryAfterMs?: number; error?: string },
  ): Promise<{ state: 'pending'; retryAt: number } | { state: 'dead' }>;
  extend(id: string, leaseMs: number): Promise<{ leaseUntil: number }>;
  /** The claim on output `outputId` while its lease runs (the delivery view). */
  claimed(outputId: string): Promise<{ attempt: number; leaseUntil: number } | undefined>;
}

/** One output handed to a worker. */
export interface ClaimTaken {
  id: string;
  record: OutboxRecord;
  attempt: number;
  leaseUntil: number;
}

/** What the webhook routes ask of the configured channels. */
export interface WebhookChannels {
  /** Whether a channel id is configured. */
  has(id: string): boolean;
  /** The body types a channel's webhook takes, for the 415 (`application/json`; WeChat's `text/xml`). */
  bodyTypes(id: string): { accepts(contentType: string | undefined): boolean; names: string };
  /** Answer a GET on a webhook URL (platform handshakes). */
  handshake(id: string, delivery: RawDelivery): PlatformReply;
  /**
   * Whether a channel takes `method` at `path` under its webhook URL (Matrix: `PUT
   * /_matrix/app/v1/transactions/<txnId>`), and how a refusal there is answered.
   */
  webhookPath?(
    id: string,
    method: string,
    path: string,
  ): { refusal(error: IntakeError): PlatformReply | undefined } | undefined;
}
