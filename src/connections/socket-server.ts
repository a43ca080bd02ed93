import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { IntakeError, isIntakeError, UnavailableError } from '../errors.js';
import type { ConnectionEvent, ConnectionView, SocketFrame, SocketPeer } from '../events/connection.js';
import type { RawDelivery } from '../events/transport.js';

/** Close codes a bot sees, each with a reason a person can act on (ws itself sends 1009 for a frame over maxPayload). */
export const CLOSE = { goingAway: 1001, unsupported: 1003, policy: 1008, tryAgain: 1013 } as const;

/** What the composition tells the socket server about the channels that take sockets. */
export interface SocketServerOptions {
  /** This instance's name, shown on every connection it holds. */
  instance: string;
  now(): number;
  logger: Logger;
  /** Largest frame, bytes (`server.bodyLimitBytes`): a larger one closes the socket with 1009. */
  maxPayload: number;
  /** The server pings every socket this often; one that has not answered the last ping is dropped (half-open). */
  pingMs: number;
  /** The channel a WebSocket upgrade path names, when it takes sockets. */
  channelOf(path: string): { channel: string; adapter: string; transport: string } | undefined;
  /** Authenticate the upgrade; throws an IntakeError whose status answers the handshake. */
  accept(channel: string, handshake: RawDelivery): SocketPeer;
  /** Read a frame before the pipeline: a meta event or an action response; undefined for an event. */
  classify(channel: string, frame: Buffer): SocketFrame | undefined;
  /** Run one event frame through the pipeline; resolves once it is recorded. */
  deliver(channel: string, delivery: RawDelivery): Promise<unknown>;
  /** `inbox_connection_events_total` and the open-connections gauge. */
  counted(channel: string, transport: string, event: ConnectionEvent): void;
}

/** An action sent on a socket, waiting for the frame that answers it. */
interface Pending {
  resolve(body: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
  live: Live;
}

interface Live {
  view: ConnectionView;
  socket: WebSocket;
  headers: IncomingMessage['headers'];
  query: URLSearchParams;
  /** Frames received and not yet handled, in order (the socket is paused while any wait). */
  queue: Buffer[];
  busy: boolean;
  alive: boolean;
}

/** Bytes queued on a socket past which no action is sent on it: the bot stopped reading. */
const MAX_BUFFERED = 1 << 20;
/** How long a stop waits for the bots to answer its close before it drops their sockets. */
const CLOSE_WAIT_MS = 2000;
/** Bots remembered for their reconnect count, past which the oldest are forgotten. */
const MAX_REMEMBERED = 10_000;

/**
 * The WebSocket server of the bots that connect to us (OneBot reverse WebSocket). It shares the
 * HTTP server's port: an upgrade on `/webhooks/<id>` of a socket channel is authenticated by
 * the channel's adapter before the handshake completes (refused: an HTTP status, nothing kept).
 * Each socket's frames are handled one at a time, in order: while one is being recorded the
 * socket is not read, so a bot that floods waits on TCP instead of growing our memory.
 */
export class SocketServer {
  private readonly wss: WebSocketServer;
  private readonly live = new Map<string, Live>();
  /** Each bot+role's latest connection, and how many times it connected. */
  private readonly latest = new Map<string, { view: ConnectionView; opened: number }>();
  private readonly idle = new Set<() => void>();
  private readonly pending = new Map<string, Pending>();
  private echoes = 0;
  private readonly pinger: NodeJS.Timeout;
  private closing = false;

  constructor(private readonly options: SocketServerOptions) {
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload, clientTracking: false });
    this.pinger = setInterval(() => this.ping(), options.pingMs);
    this.pinger.unref();
  }

  /** Every connection this instance holds or held (the latest of each bot and role), newest first. */
  list(): ConnectionView[] {
    return [...this.latest.values()].map(({ view }) => ({ ...view })).sort((a, b) => b.connectedAt - a.connectedAt);
  }

  /** The HTTP server's `upgrade` handler. Returns false for a path that is not a socket channel's. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const target = this.options.channelOf(url.pathname);
    if (!target) return false;
    const { channel, transport } = target;
    if (this.closing) {
      refuse(socket, 503, 'unavailable', 'The service is stopping; reconnect to another instance or retry shortly');
      this.options.counted(channel, transport, 'refused');
      return true;
    }
    let peer: SocketPeer;
    try {
      peer = this.options.accept(channel, { headers: request.headers, body: Buffer.alloc(0), query: url.searchParams, now: this.options.now() });
    } catch (error) {
      const status = isIntakeError(error) ? error.status : 500;
      const code = isIntakeError(error) ? error.code : 'internal';
      refuse(socket, status, code, (error as Error).message);
      this.options.counted(channel, transport, 'refused');
      this.options.logger.warn({ channel, code, reason: (error as Error).message }, 'socket refused');
      return true;
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => this.opened(ws, target, peer, request.headers, url.searchParams));
    return true;
  }

  private opened(socket: WebSocket, target: { channel: string; adapter: string; transport: string }, peer: SocketPeer, headers: IncomingMessage['headers'], query: URLSearchParams): void {
    const key = `${target.channel}\n${peer.botId}\n${peer.role}`;
    const before = this.live.get(key);
    if (before) before.socket.close(CLOSE.policy, 'replaced by a newer connection of the same bot and role');
    const remembered = this.latest.get(key);
    const view: ConnectionView = {
      ...target, botId: peer.botId, role: peer.role, instance: this.options.instance, state: 'open',
      connectedAt: this.options.now(), lastEventAt: null, lastHeartbeatAt: null, reconnects: remembered?.opened ?? 0,
    };
    this.latest.delete(key);
    this.latest.set(key, { view, opened: (remembered?.opened ?? 0) + 1 });
    if (this.latest.size > MAX_REMEMBERED) this.latest.delete(this.latest.keys().next().value as string);
    const live: Live = { view, socket, headers, query, queue: [], busy: false, alive: true };
    this.live.set(key, live);
    this.options.counted(target.channel, target.transport, remembered ? 'reconnect' : 'open');
    this.options.logger.info({ channel: target.channel, botId: peer.botId, role: peer.role }, 'bot connected');

    socket.on('pong', () => {
      live.alive = true;
    });
    socket.on('message', (data, isBinary) => {
      if (isBinary) {
        socket.close(CLOSE.unsupported, 'binary frames are not supported: send each event as a JSON text frame');
        return;
      }
      live.queue.push(data as Buffer);
      if (!live.busy) void this.drain(live);
    });
    socket.on('error', (error) => {
      // ws closes the socket itself (a frame over maxPayload: 1009); say why.
      this.options.logger.warn({ channel: target.channel, botId: peer.botId, err: error }, 'socket error');
    });
    socket.on('close', (code, reason) => {
      view.state = 'closed';
      for (const [echo, waiting] of this.pending) {
        if (waiting.live === live) this.settle(echo)?.reject(new IntakeError('bot_disconnected', 502, `Bot ${peer.botId} on channel "${target.channel}" disconnected before it answered the action`, { channel: target.channel, stage: 'connections' }));
      }
      if (this.live.get(key) === live) this.live.delete(key);
      this.options.counted(target.channel, target.transport, 'close');
      this.options.logger.info({ channel: target.channel, botId: peer.botId, role: peer.role, code, reason: reason.toString() }, 'bot disconnected');
    });
  }

  /** Handle the queued frames of one socket in order, not reading it meanwhile. */
  private async drain(live: Live): Promise<void> {
    live.busy = true;
    live.socket.pause();
    try {
      for (let frame = live.queue.shift(); frame; frame = live.queue.shift()) await this.frame(live, frame);
    } finally {
      live.busy = false;
      // Read on while the socket is open or closing: the bot's answer to our close comes that way.
      if (live.socket.readyState === live.socket.OPEN || live.socket.readyState === live.socket.CLOSING) live.socket.resume();
      if (!this.busy()) for (const wake of this.idle) wake();
    }
  }

  private async frame(live: Live, frame: Buffer): Promise<void> {
    const { view } = live;
    const now = this.options.now();
    let read: SocketFrame | undefined;
    try {
      read = this.options.classify(view.channel, frame);
    } catch {
      read = undefined; // not a meta frame after all: the pipeline says what is wrong with it
    }
    if (read?.kind === 'meta') {
      if (read.heartbeat) view.lastHeartbeatAt = now;
      if (read.intervalMs !== undefined) view.heartbeatMs = read.intervalMs;
      return;
    }
    if (read?.kind === 'response') {
      const waiting = this.pending.get(read.echo);
      if (waiting?.live === live) this.settle(read.echo)?.resolve(read.body);
      return;
    }
    try {
      await this.options.deliver(view.channel, { headers: live.headers, body: frame, query: live.query, now, authenticated: true });
      view.lastEventAt = now;
    } catch (error) {
      // Refused frames are counted and trailed by the pipeline. A frame the store could not
      // record is lost (a socket has no retry): close, so the bot's reconnect shows the outage.
      if (isIntakeError(error) && error.status === 503) live.socket.close(CLOSE.tryAgain, `not recorded: ${error.message}`.slice(0, 120));
    }
  }

  /**
   * Send an action `{action, params, echo}` on a bot's socket and resolve with the bot's answer.
   * `botId` picks the bot (else the one connected longest); Event-only sockets take no actions.
   */
  call(channel: string, action: string, params: unknown, botId: string | undefined, timeoutMs: number): Promise<unknown> {
    const context = { channel, stage: 'connections' };
    const candidates = [...this.live.values()].filter(({ view }) => view.channel === channel && view.role !== 'Event');
    const live = candidates.filter(({ view }) => botId === undefined || view.botId === botId).sort((a, b) => a.view.connectedAt - b.view.connectedAt)[0];
    if (!live) {
      const ids = [...new Set(candidates.map(({ view }) => view.botId))];
      const which = botId === undefined ? 'No bot is connected' : `Bot ${botId} is not connected`;
      throw new IntakeError('bot_not_connected', 404, `${which} on channel "${channel}" for actions (connected: ${ids.length ? ids.join(', ') : 'none'})`, context);
    }
    if (live.socket.bufferedAmount > MAX_BUFFERED) {
      throw new UnavailableError('bot_not_reading', `Bot ${live.view.botId} on channel "${channel}" is not reading its socket (${live.socket.bufferedAmount} bytes waiting): the action was not sent`, 5, context);
    }
    const echo = `${this.options.instance}:${++this.echoes}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.settle(echo)?.reject(new IntakeError('action_timeout', 504, `Bot ${live.view.botId} on channel "${channel}" did not answer "${action}" within ${timeoutMs} ms`, context));
      }, timeoutMs);
      this.pending.set(echo, { resolve, reject, timer, live });
      live.socket.send(JSON.stringify({ action, params, echo }));
    });
  }

  /** Take a pending action out of the table (once: a late answer after a timeout finds nothing). */
  private settle(echo: string): Pending | undefined {
    const waiting = this.pending.get(echo);
    if (!waiting) return undefined;
    this.pending.delete(echo);
    clearTimeout(waiting.timer);
    return waiting;
  }

  private busy(): boolean {
    for (const live of this.live.values()) if (live.busy) return true;
    return false;
  }

  /** Drop sockets that did not answer the last ping (half-open), ping the rest. */
  private ping(): void {
    for (const live of this.live.values()) {
      if (!live.alive) {
        this.options.logger.warn({ channel: live.view.channel, botId: live.view.botId }, 'socket did not answer a ping: dropped');
        live.socket.terminate();
        continue;
      }
      live.alive = false;
      live.socket.ping();
    }
  }

  /**
   * Stop: refuse new sockets and close every open one (1001). Frames a bot sent before it read
   * the close are still recorded (the socket is read until the bot answers the close, at most
   * `closeWaitMs`); then the frames being recorded finish.
   */
  async close(closeWaitMs = CLOSE_WAIT_MS): Promise<void> {
    this.closing = true;
    clearInterval(this.pinger);
    const open = [...this.live.values()];
    const ended = Promise.all(open.map((live) => new Promise<void>((resolve) => {
      if (live.socket.readyState === live.socket.CLOSED) resolve();
      else live.socket.once('close', () => resolve());
    })));
    for (const live of open) live.socket.close(CLOSE.goingAway, 'server stopping');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise<void>((resolve) => { timer = setTimeout(resolve, closeWaitMs); })]);
    clearTimeout(timer);
    for (const live of open) if (live.socket.readyState !== live.socket.CLOSED) live.socket.terminate();
    if (this.busy()) await new Promise<void>((resolve) => this.idle.add(resolve));
    this.wss.close();
  }
}

/** Answer a refused upgrade with an HTTP status and the service's error body, and hang up. */
function refuse(socket: Duplex, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  const reason = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' }[status] ?? 'Error';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}
