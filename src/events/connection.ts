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
   * A platform envelope (Slack Socket Mode, a Gateway dispatch): `body`, when there is one,
   * goes through the pipeline; once it is recorded (or refused), never before, `ack` is sent
   * back and `recorded` runs (a Gateway session moves its cursor past it). `botId`: the bot the
   * envelope names, which names a connection that has no other way to say who it is (Milky).
   */
  | { kind: 'envelope'; ack?: string; body?: Buffer; recorded?: () => void; botId?: string }
  /** The platform asks us to move to a new socket (Slack `disconnect`): dial the next, then this one closes. */
  | RefreshFrame;

/**
 * The platform asks us to move to a new socket. `disabled`: it turned the connection off (Slack
 * `link_disabled`) and says what a person must do; the next socket is asked for only after
 * `reconnectMaxMs`.
 */
export interface RefreshFrame {
  kind: 'refresh';
  reason: string;
  disabled?: string;
}

/** Who opened a socket, as the adapter authenticated the upgrade. */
export interface SocketPeer {
  botId: string;
  role: string;
}

/** The connection metrics' events (`inbox_connection_events_total{event}`). */
export type ConnectionEvent = 'open' | 'close' | 'refused' | 'reconnect';

/** A bot WebSocket we dial (OneBot `ws`). */
export interface SocketDial {
  /** The socket's URL; or '' with `open`, which asks the platform for a fresh one per connection. */
  readonly url: string;
  open?(signal: AbortSignal): Promise<string>;
  readonly headers: Readonly<Record<string, string>>;
  /** Reconnect backoff: from `reconnectMinMs`, doubling up to `reconnectMaxMs`, jittered; it starts over after a healthy connection. */
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  /** The store lease that makes one instance the dialer; a survivor takes over within this. */
  readonly leaseMs: number;
  /** The action asked first on a new socket, whose answer names the bot. */
  readonly whoAmI?: { readonly action: string; botIdOf(answer: unknown): string | undefined };
  /**
   * A protocol we drive on each socket (the Discord Gateway: identify, heartbeats, resume):
   * made when the socket opens, it reads every frame of that socket first.
   */
  session?(io: SessionIo): DialSession;
}

/**
 * The hand a connection runs under (one connection per bot across all instances): its work lands
 * only while the store's lease keeps the fence this instance took it with. A refusal means
 * another instance holds the connection now; the lease keeper is told and stops it.
 */
export interface LeaseFence {
  /** True while the lease has not changed hands: asked before an event is recorded or acknowledged. */
  holds(): Promise<boolean>;
  /** Keep a cursor in the store under the fence; false, nothing written, once the lease changed hands. */
  put(key: string, value: string, ttlMs: number): Promise<boolean>;
}

/** What a dialled socket's session may do: send, close, time. */
export interface SessionIo {
  send(text: string): void;
  /** Close the socket; the session's `closed` then says whether to dial again. */
  close(code: number, reason: string): void;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  now(): number;
  /** In [0, 1): jitter. */
  random(): number;
  /** The lease the socket is held under (absent when dialled without one): cursors are kept through it. */
  fence?: LeaseFence;
}

/** The protocol of one dialled socket. */
export interface DialSession {
  /** Read a frame as `socketFrame` would: a meta frame, an envelope, or undefined for an event to ingest as it is. */
  frame(frame: Buffer): SocketFrame | undefined;
  /**
   * The socket closed (its timers are the session's to clear): `retry` dials again with the
   * backoff; `stop` is a fault no retry fixes (a refused token), logged with `why`.
   */
  closed(code: number, reason: string): { next: 'retry' } | { next: 'stop'; why: string };
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
  /** A poll not answered within this is stalled (a half-open connection): aborted and asked again. */
  readonly stallMs: number;
  /** One long poll from `cursor` (undefined: where the platform keeps it). Throws a PollError on failure. */
  next(cursor: string | undefined, signal: AbortSignal): Promise<Polled>;
}

/** A failed poll; `hint` says what the operator must do when retrying alone will not help (a webhook still set). */
export class PollError extends Error {
  override name = 'PollError';
  /** `retryAfterMs`: the platform said when to ask again (Telegram 429 `retry_after`). */
  constructor(
    message: string,
    readonly hint?: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** A socket URL refused for a while; `retryAfterMs` says when to ask again (Discord's used-up daily session starts). */
export class DialError extends Error {
  override name = 'DialError';
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}
