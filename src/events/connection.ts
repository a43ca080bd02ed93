/** The shapes of a bot's long-lived connection: what adapters, the connection layer and the HTTP views share. */

/** What the service knows of one bot connection (`GET /v1/connections`, the console, metrics). */
export interface ConnectionView {
  channel: string;
  adapter: string;
  transport: string;
  botId: string;
  role: string;
  /** The instance holding the socket. `botId` is '' on a socket we dialled until the bot says who it is. */
  instance: string;
  state: 'open' | 'connecting' | 'closed';
  connectedAt: number;
  lastEventAt: number | null;
  lastHeartbeatAt: number | null;
  /** Connections of this bot and role opened on this channel before the current one. */
  reconnects: number;
  /** The heartbeat interval the bot announced, ms (seconds from Lagrange, normalized). */
  heartbeatMs?: number;
}

/** How an adapter reads one socket frame before the pipeline does. */
export type SocketFrame =
  /** A lifecycle or heartbeat meta event: it updates the connection, never becomes a message. */
  | { kind: 'meta'; heartbeat: boolean; intervalMs?: number; botId?: string }
  /** The answer to an action we sent (`echo` matches it). */
  | { kind: 'response'; echo: string; body: unknown }
  /**
   * A platform envelope (Slack Socket Mode): `body`, when there is one, goes through the
   * pipeline; `ack` is sent back once it is recorded (or refused), never before.
   */
  | { kind: 'envelope'; ack: string; body?: Buffer }
  /** The platform asks us to move to a new socket (Slack `disconnect`): dial the next, then this one closes. */
  | { kind: 'refresh'; reason: string };

/** Who opened a socket, as the adapter authenticated the upgrade. */
export interface SocketPeer {
  botId: string;
  role: string;
}

/** The connection metrics' events (`inbox_connection_events_total{event}`). */
export type ConnectionEvent = 'open' | 'close' | 'refused' | 'reconnect';

/** A bot WebSocket we dial (CONTRACT §9, OneBot `ws`). */
export interface SocketDial {
  /** The socket's URL; or '' with `open`, which asks the platform for a fresh one per connection. */
  readonly url: string;
  open?(signal: AbortSignal): Promise<string>;
  readonly headers: Readonly<Record<string, string>>;
  /** Reconnect backoff: from `reconnectMinMs`, doubling up to `reconnectMaxMs`, jittered. */
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  /** The store lease that makes one instance the dialer; a survivor takes over within this. */
  readonly leaseMs: number;
  /** The action asked first on a new socket, whose answer names the bot. */
  readonly whoAmI?: { readonly action: string; botIdOf(answer: unknown): string | undefined };
}

/** What one long poll brought: the updates (each a delivery's body) and the cursor that confirms them. */
export interface Polled {
  bodies: Buffer[];
  /** Where the next poll starts; stored only once every body is recorded. */
  cursor: string | undefined;
}

/** A transport we pull (Telegram `getUpdates`): one poll at a time, by the one instance holding its lease. */
export interface PollSpec {
  /** `transport` in `/v1/connections`. */
  readonly transport: string;
  /** The bot, as `/v1/connections` names it. */
  readonly botId: string;
  readonly leaseMs: number;
  /** Backoff after a failed poll: from `reconnectMinMs`, doubling up to `reconnectMaxMs`, jittered. */
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  /** One long poll from `cursor` (undefined: where the platform keeps it). Throws a PollError on failure. */
  next(cursor: string | undefined, signal: AbortSignal): Promise<Polled>;
}

/** A failed poll; `hint` says what the operator must do when retrying alone will not help (a webhook still set). */
export class PollError extends Error {
  override name = 'PollError';
  constructor(message: string, readonly hint?: string) {
    super(message);
  }
}
