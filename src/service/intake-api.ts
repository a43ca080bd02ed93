import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { ClockInput } from '../core/clock.js';
import type { LoadOptions } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { ConnectionView } from '../events/connection.js';
import type { BotRef, CorrelationRecord, InboundEvent } from '../events/inbound.js';
import type { OutputOf, OutputType } from '../events/output.js';
import type { PlatformReply, RawDelivery } from '../events/transport.js';
import type { Handler } from '../handlers/routes.js';
import type { Metrics } from '../metrics/index.js';
import type { InboundMiddleware } from '../ingest/chain.js';
import type { Store, TurnDone, TurnView } from '../core/ports/index.js';

export interface CreateIntakeOptions {
  /** A loaded Config; or give `configFile`/`env` to load one. */
  config?: Config;
  /** Raw config object (the shape of the config file), validated like the file. */
  configFile?: Record<string, unknown>;
  /**
   * Environment variables to load the config with (`HOST`, `INTAKE_STORE`, ...), as `npm start`
   * reads them: `process.env` to read the host process's. @default none: no variable is read
   */
  env?: LoadOptions['env'];
  /** Defaults to the store named by `config.store`. */
  store?: Store;
  /** Time for every window and timer (a fake one in tests); `setInterval`/`clearInterval` may be left out. @default the system clock */
  clock?: ClockInput;
  /** Where the intake logs (a child of your app's pino logger). @default pino at `config.logLevel`, to stdout */
  logger?: Logger;
  metrics?: Metrics;
  /** HTTP client for pushes to the agent. @default an undici Agent */
  agentDispatcher?: Dispatcher;
  /** Working directory for relative paths (store, media). */
  cwd?: string;
  /** This instance's name in `/v1/connections` and on Redis. @default `<hostname>:<pid>` */
  instance?: string;
  /** How often every bot socket is pinged; one that did not answer the last ping is dropped (half-open). @default 30000 */
  socketPingMs?: number;
  /**
   * How long a flush owns its buffer before another instance may take the buffer over: an
   * instance that died mid-flush holds that session this long. Renewed every third of it while
   * the flush runs. @default 30000
   */
  flushLeaseMs?: number;
  /**
   * How long a push attempt owns its outbox record before another instance may push it: an
   * instance that died mid-push holds that session's pushes this long. @default agent.timeoutMs x 2 + 5000
   */
  pushLeaseMs?: number;
}

/** The library surface (docs/library.md). */
export interface Intake {
  /** The Koa app serving the HTTP routes (docs/http.md); `app.listen()` or mount `middleware()` in your own. */
  readonly app: Koa;
  readonly config: Config;
  /** This instance's name, as `/v1/connections` shows it on the connections it holds. */
  readonly instance: string;
  /** The store this instance runs on (for operators and tests; stages reach it only through the composition). */
  readonly store: Store;
  /** The metrics registry behind `/metrics`. */
  readonly metrics: Metrics;
  /**
   * The app as one Koa middleware, to mount inside another Koa app (under a prefix with
   * koa-mount too): a request it has no route for goes on to your app's next middleware.
   */
  middleware(): Koa.Middleware;
  /** Only the webhooks (`/webhooks/<id>`, POST and the GET handshakes), for an app that serves its own `/metrics`, `/` and API. */
  webhooks(): Koa.Middleware;
  /**
   * Ingest one delivery without HTTP (a OneBot WebSocket, a queue consumer): verified,
   * normalized and admitted exactly as a webhook; resolves with the answer a webhook would get.
   */
  ingest(channel: string, delivery: RawDelivery): Promise<PlatformReply>;
  /**
   * The HTTP server's `upgrade` handler (`server.on('upgrade', intake.upgrade)`): takes the
   * WebSocket of a bot connecting to a socket channel's webhook URL (OneBot `ws-reverse`).
   * Returns false, touching nothing, for a path that is not one; the caller then ends the socket.
   */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /**
   * The bot connections of the deployment (`GET /v1/connections`): those this instance holds or
   * held and, on Redis, every other instance's.
   */
  connections(): Promise<ConnectionView[]>;
  /**
   * Run a OneBot action (`send_group_msg`, ...) through a bot connected by WebSocket (on this
   * instance or, on Redis, relayed to the one holding the socket) or through a HTTP channel's
   * `apiUrl`: resolves with the bot's answer `{status, retcode, data}`; throws
   * `bot_not_connected` (404), `action_timeout` (504), `bot_disconnected` (502).
   */
  action(channel: string, action: string, params: Record<string, unknown>, selfId?: string): Promise<unknown>;
  /**
   * Add a step to the inbound chain: it sees every normalized event before dedup and buffering,
   * in `use` order, and drops it by not calling `next()` (allow-lists, spam filters, tags).
   */
  use(middleware: InboundMiddleware): Intake;
  /** Receive every output of a type (`chat.processedMessage`, `chat.notice`, `chat.request`) flushed by this instance. */
  on<T extends OutputType>(event: T, listener: (output: OutputOf<T>) => unknown): Intake;
  off<T extends OutputType>(event: T, listener: (output: OutputOf<T>) => unknown): Intake;
  /**
   * Run `fn` for events of a route (`message`, `message.group`, `notice.group_increase`,
   * `request.friend`, ...) once per logical event, after it is recorded; a leading `!` runs it
   * for every delivery.
   */
  handle(route: string | readonly string[], fn: Handler): Intake;
  /** What is known of an event's logical group (every delivery, each bot's ids). */
  correlation(event: InboundEvent): CorrelationRecord;
  /** Every bot that delivered this logical event, first arrival first. */
  botsForEvent(event: InboundEvent): BotRef[];
  /** Connected bots the message mentions, in mention order. */
  mentionedBots(event: InboundEvent): BotRef[];
  /** The bot that should answer: mentioned and connected, else first arrival, else the deliverer. */
  pickReplyBot(event: InboundEvent): BotRef;
  correlationStats(): { groups: number; observed: number; duplicates: number; evicted: number };
  /**
   * Close the agent turn `outputId` opened (docs/turns.md), as `POST /v1/turns/<id>/done` does:
   * what it held is released (by any instance). `unknown` for an id no output has; `already`
   * for a turn closed before (nothing is emitted twice).
   */
  turnDone(outputId: string): Promise<TurnDone>;
  /** A session's agent turn: open or not, its output id, and how many messages it holds. */
  turn(sessionKey: string): Promise<TurnView>;
  /** Wait until every buffer due by now is flushed and every flush started has ended (tests, tools). */
  settle(): Promise<void>;
  /**
   * Announce a stop: `/readyz` answers 503 from now on while deliveries are still taken, so a
   * load balancer stops sending before `close` refuses them (`npm start` drains for `server.drainMs`).
   */
  drain(): void;
  /** Stop: flush every open buffer (store not shared), stop pushing, close the store. */
  close(): Promise<void>;
}
