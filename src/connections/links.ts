import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { systemClock, type Clock } from '../core/clock.js';
import type { ConnectionEvent, ConnectionView, SocketFrame, SocketPeer } from '../events/connection.js';
import type { InOrder, RawDelivery } from '../events/transport.js';
import { Calls } from './calls.js';
import { CLOSE, Frames, type Dialled, type Live } from './frames.js';
import { inOrder } from './in-order.js';
import { Roster } from './roster.js';

/** Which channel a socket serves and how it came (`ws-reverse`: the bot dialled us; `ws`: we dialled it). */
export interface LinkTarget {
  channel: string;
  adapter: string;
  transport: string;
}

/** What the composition tells the live sockets about their channels. */
export interface LinksOptions {
  /** This instance's name, shown on every connection it holds. */
  instance: string;
  now(): number;
  /** Times the actions' answers. @default systemClock */
  clock?: Clock;
  logger: Logger;
  /** Read a frame before the pipeline: a meta event or an action response; undefined for an event. */
  classify(channel: string, frame: Buffer): SocketFrame | undefined;
  /** Run one event frame through the pipeline; resolves once it is recorded. */
  deliver(channel: string, delivery: RawDelivery, turn: InOrder): Promise<unknown>;
  /** `inbox_connection_events_total` and the open-connections gauge. */
  counted(channel: string, transport: string, event: ConnectionEvent): void;
  /** A connection opened, closed, is being dialled or was named: what other instances see changed. */
  changed?(): void;
}

/**
 * The bot sockets this instance holds, whoever opened them (the socket server for bots that
 * dial us, a dialer for the bots we dial): each socket's frames are handled one at a time, in
 * order; while one is being recorded the socket is not read, so a bot that floods waits on TCP
 * instead of growing our memory. Actions go out on them and their answers are matched by echo.
 */
export class Links {
  private readonly live = new Map<string, Live>();
  /** Each bot+role's latest connection, and how many times it connected. */
  private readonly roster: Roster;
  /** Sockets whose frames are being handled, open or closed since: a stop waits for all of them. */
  private readonly draining = new Set<Live>();
  private readonly idle = new Set<() => void>();
  private readonly calls: Calls;
  private readonly frames: Frames;

  constructor(private readonly options: LinksOptions) {
    this.roster = new Roster(options.now);
    this.calls = new Calls(options.instance, options.clock ?? systemClock);
    this.frames = new Frames({ ...options, answered: (socket, echo, body) => this.calls.answered(socket, echo, body) });
  }

  /** Every connection this instance holds or held lately (the latest of each bot and role), newest first. */
  list(): ConnectionView[] {
    return this.roster.list();
  }

  /** How many sockets are open now. */
  get size(): number {
    return this.live.size;
  }

  /**
   * Show a connection being dialled (`state: connecting`) before it opens, under the key its
   * socket will have (`attach` then shows it open).
   */
  connecting(key: string, target: LinkTarget, peer: SocketPeer): void {
    const remembered = this.roster.get(key);
    if (remembered && remembered.view.state !== 'closed') return;
    this.roster.put(key, this.viewOf(target, peer, remembered?.opened ?? 0, 'connecting'), remembered?.opened ?? 0);
    this.options.changed?.();
  }

  /** Name the bot of a socket we dialled, once it said who it is. */
  identify(key: string, botId: string): void {
    const live = this.live.get(key);
    if (live) live.view.botId = botId;
    this.options.changed?.();
  }

  /** Forget a connection this instance no longer dials (another instance holds it now). */
  forget(key: string): void {
    this.roster.forget(key);
    this.options.changed?.();
  }

  /**
   * Take an open socket: a second socket under the same key (bot and role) replaces the first
   * (closed 1008). Its frames are read from now on.
   */
  attach(
    key: string,
    socket: WebSocket,
    target: LinkTarget,
    peer: SocketPeer,
    headers: IncomingMessage['headers'] = {},
    query = new URLSearchParams(),
    dialled: Dialled = {},
  ): void {
    const before = this.live.get(key);
    if (before) before.socket.close(CLOSE.policy, 'replaced by a newer connection of the same bot and role');
    const remembered = this.roster.get(key);
    const view = this.viewOf(target, peer, remembered?.opened ?? 0, 'open');
    this.roster.put(key, view, (remembered?.opened ?? 0) + 1);
    const live: Live = {
      view,
      socket,
      headers,
      query,
      queue: [],
      busy: false,
      moved: 0,
      alive: true,
      ...dialled,
    };
    this.live.set(key, live);
    this.options.counted(target.channel, target.transport, remembered?.opened ? 'reconnect' : 'open');
    this.options.changed?.();
    this.options.logger.info(
      { channel: target.channel, botId: peer.botId, role: peer.role, transport: target.transport },
      'bot connected',
    );

    socket.on('pong', () => {
      live.alive = true;
    });
    socket.on('message', (data, isBinary) => {
      if (isBinary) {
        socket.close(CLOSE.unsupported, 'binary frames are not supported: send each event as a JSON text frame');
        return;
      }
      live.queue.push(data as Buffer);
      live.moved++;
      if (!live.busy) void this.drain(live);
    });
    socket.on('error', (error) => {
      // ws closes the socket itself (a frame over maxPayload: 1009); say why.
      this.options.logger.warn({ channel: target.channel, botId: view.botId, err: error }, 'socket error');
    });
    socket.on('close', (code, reason) => {
      this.roster.close(key, view);
      this.calls.disconnected(socket, view);
      if (this.live.get(key) === live) this.live.delete(key);
      this.options.counted(target.channel, target.transport, 'close');
      this.options.changed?.();
      this.options.logger.info(
        { channel: target.channel, botId: view.botId, role: view.role, code, reason: reason.toString() },
        'bot disconnected',
      );
    });
  }

  private viewOf(
    target: LinkTarget,
    peer: SocketPeer,
    reconnects: number,
    state: ConnectionView['state'],
  ): ConnectionView {
    return {
      ...target,
      botId: peer.botId,
      role: peer.role,
      instance: this.options.instance,
      state,
      connectedAt: this.options.now(),
      lastEventAt: null,
      lastHeartbeatAt: null,
      reconnects,
    };
  }

  /**
   * Handle the queued frames of one socket, read by read, not reading it meanwhile: the frames of
   * one read (at most what one TCP read brings) run in order (inOrder: each starts once the one
   * before reached admission), so the read is recorded in one store step. No read-ahead: a
   * flooding bot waits on TCP, and what a kill -9 loses is no more than the TCP buffers hold
   * (docs/channels.md). Frames read before the socket closed are handled all the same (the last
   * read often brings the bot's final frames with its answer to our close).
   */
  private async drain(live: Live): Promise<void> {
    live.busy = true;
    this.draining.add(live);
    live.socket.pause();
    try {
      // ws emits the frames of one chunk synchronously (allowSynchronousEvents, on by default):
      // the rest of this one's chunk queues before the first read is taken.
      await Promise.resolve();
      while (live.queue.length > 0) {
        const frames = live.queue;
        live.queue = [];
        const read = { now: this.options.now() };
        await inOrder(frames, async (frame, turn) => {
          await this.frames.handle(live, frame, read, turn);
          live.moved++;
        });
      }
    } finally {
      live.busy = false;
      this.draining.delete(live);
      if (readable(live.socket)) live.socket.resume();
      if (this.draining.size === 0) {
        for (const wake of this.idle) wake();
        this.idle.clear();
      }
    }
  }

  /** The bots of a channel that take actions here (not Event-only sockets), connected longest first. */
  actionBots(channel: string): string[] {
    return this.takers(channel).map(({ view }) => view.botId);
  }

  private takers(channel: string): Live[] {
    return [...this.live.values()]
      .filter(({ view }) => view.channel === channel && view.role !== 'Event')
      .sort((a, b) => a.view.connectedAt - b.view.connectedAt);
  }

  /**
   * Send an action `{action, params, echo}` on a bot's socket and resolve with the bot's answer.
   * `botId` picks the bot (else the one connected longest); Event-only sockets take no actions.
   * Undefined when no such bot is connected here.
   */
  call(
    channel: string,
    action: string,
    params: unknown,
    botId: string | undefined,
    timeoutMs: number,
  ): Promise<unknown> | undefined {
    const live = this.takers(channel).find(({ view }) => botId === undefined || view.botId === botId);
    return live && this.calls.send(live.socket, live.view, action, params, timeoutMs);
  }

  /** Resolves once no frame is being recorded, on any socket, open or closed. */
  async drained(): Promise<void> {
    if (this.draining.size > 0) await new Promise<void>((resolve) => this.idle.add(resolve));
  }

  /** Drop sockets that did not answer the last ping (half-open), ping the rest. */
  ping(): void {
    for (const live of this.live.values()) {
      if (!live.alive) {
        this.options.logger.warn(
          { channel: live.view.channel, botId: live.view.botId },
          'socket did not answer a ping: dropped',
        );
        live.socket.terminate();
        continue;
      }
      live.alive = false;
      live.socket.ping();
    }
  }

  /**
   * Close the sockets `which` selects (1001) and read each until its bot answered the close: the
   * frames it sent before it read ours are still recorded. A socket that moved no frame for
   * `closeWaitMs` is dropped, and none is read longer than `maxWaitMs` (a bot that flooded us
   * can have more in the TCP buffers than a stop can wait for). Resolves once every socket is
   * closed; `drained` then says when their last frames are recorded.
   */
  async close(
    which: (view: ConnectionView) => boolean,
    closeWaitMs: number,
    reason = 'server stopping',
    maxWaitMs = closeWaitMs,
  ): Promise<void> {
    const open = [...this.live.values()].filter(({ view }) => which(view));
    for (const live of open) live.socket.close(CLOSE.goingAway, reason);
    await Promise.all(
      open.map(async (live) => {
        const ended = closedOf(live.socket);
        for (let waited = 0; waited < maxWaitMs; waited += closeWaitMs) {
          const moved = live.moved;
          if (await within(ended, Math.min(closeWaitMs, maxWaitMs - waited))) return;
          if (live.moved === moved) break;
        }
        // Frames ws still holds are read out before its close event: wait for it.
        live.socket.terminate();
        await ended;
      }),
    );
  }
}

/** Read on while the socket is open or closing: the bot's answer to our close comes that way. */
function readable(socket: WebSocket): boolean {
  return socket.readyState === socket.OPEN || socket.readyState === socket.CLOSING;
}

/** Resolves once `socket` is closed. */
function closedOf(socket: WebSocket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.readyState === socket.CLOSED) resolve();
    else socket.once('close', () => resolve());
  });
}

/**
 * Whether `promise` settles within `ms` of real time. A stop's waits are on the process's own
 * timers, not the injected clock: they bound shutdown against the orchestrator's grace period
 * before SIGKILL, as main.ts's drain and exit timers do, whatever clock the stages run on.
 */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return settled;
}
