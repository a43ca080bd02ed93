import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { isIntakeError } from '../core/errors.js';
import type { ConnectionView, DialSession, LeaseFence, RefreshFrame, SocketFrame } from '../events/connection.js';
import type { InOrder, RawDelivery } from '../events/transport.js';

/** Close codes a bot sees, each with a reason a person can act on (ws itself sends 1009 for a frame over maxPayload). */
export const CLOSE = { goingAway: 1001, unsupported: 1003, policy: 1008, tryAgain: 1013 } as const;

/** What a socket we dialled brings beside its frames. */
export interface Dialled {
  /** The dialer's answer to a platform asking us to move to a new socket. */
  refresh?: (asked: RefreshFrame) => void;
  /** The protocol we drive on the socket (Discord Gateway): it reads every frame first. */
  session?: DialSession;
  /** The lease the socket is held under: no event is recorded or acknowledged once it changed hands. */
  fence?: LeaseFence;
}

/** One socket as the connections hold it: its connection, what came with it, its frames waiting. */
export interface Live extends Dialled {
  view: ConnectionView;
  /** Its fence was refused: another instance holds the connection; nothing more is recorded here. */
  late?: boolean;
  socket: WebSocket;
  headers: IncomingMessage['headers'];
  query: URLSearchParams;
  /** Frames received and not yet handled, in order (the socket is paused while a read is recorded). */
  queue: Buffer[];
  busy: boolean;
  /** Frames received or handled so far: a closing socket that still moves is read on. */
  moved: number;
  alive: boolean;
}

/** One read of a socket: the time it came, and the lease check its frames share (asked once). */
export interface Read {
  now: number;
  fenced?: Promise<boolean>;
}

/** What a frame reaches beyond its socket. */
export interface FrameOptions {
  now(): number;
  logger: Logger;
  /** Read a frame before the pipeline: a meta event or an action response; undefined for an event. */
  classify(channel: string, frame: Buffer): SocketFrame | undefined;
  /** Run one event frame through the pipeline, in its turn of the read; resolves once it is recorded. */
  deliver(channel: string, delivery: RawDelivery, turn: InOrder): Promise<unknown>;
  /** A connection was named: what other instances see changed. */
  changed?(): void;
  /** A frame on `socket` answered the action sent with `echo`. */
  answered(socket: WebSocket, echo: string, body: unknown): void;
}

/**
 * What one frame of a bot socket does, as its adapter (or the session we drive on a dialled
 * socket) reads it: a meta event updates the connection, an action's answer settles the action,
 * a platform's envelope is acknowledged once its body is recorded, and anything else goes
 * through the pipeline as a webhook; on a socket held under a lease, only while the lease keeps
 * its fence.
 */
export class Frames {
  constructor(private readonly options: FrameOptions) {}

  /**
   * Handle one frame of `live`, in its turn of `read` (inOrder): resolves once it is recorded,
   * refused or kept by the connection. Never rejects.
   */
  async handle(live: Live, frame: Buffer, read: Read, turn: InOrder): Promise<void> {
    const { view } = live;
    const { now } = read;
    let seen: SocketFrame | undefined;
    try {
      seen = live.session ? live.session.frame(frame) : this.options.classify(view.channel, frame);
    } catch {
      seen = undefined; // not a meta frame after all: the pipeline says what is wrong with it
    }
    if (seen?.kind === 'meta') {
      if (seen.heartbeat) view.lastHeartbeatAt = now;
      if (seen.intervalMs !== undefined) view.heartbeatMs = seen.intervalMs;
      if (seen.botId !== undefined && view.botId === '') {
        view.botId = seen.botId;
        this.options.changed?.();
      }
      return;
    }
    if (seen?.kind === 'response') {
      this.options.answered(live.socket, seen.echo, seen.body);
      return;
    }
    if (seen?.kind === 'refresh') {
      this.options.logger.info({ channel: view.channel, reason: seen.reason }, 'the platform asks for a new socket');
      live.refresh?.(seen);
      return;
    }
    if (seen?.kind === 'envelope') {
      if (seen.botId !== undefined && view.botId === '') {
        view.botId = seen.botId;
        this.options.changed?.();
      }
      // Acknowledged once recorded (or refused: a retry would be refused again); not when the
      // store could not record it, or the lease changed hands, so the platform sends it again.
      if (!(await (read.fenced ??= this.fenced(live)))) return;
      if (seen.body && !(await this.record(live, seen.body, now, turn))) return;
      if (seen.ack !== undefined && live.socket.readyState === live.socket.OPEN) live.socket.send(seen.ack);
      seen.recorded?.();
      return;
    }
    if (await (read.fenced ??= this.fenced(live))) await this.record(live, frame, now, turn);
  }

  /**
   * On a socket held under a lease: true while the lease keeps its fence. A holder paused past
   * its lease learns here that another instance took the connection over: it records and
   * acknowledges nothing more (the platform sends those events to the survivor) and its lease
   * keeper closes the socket. A store that cannot answer is a store that cannot record: the
   * socket is closed so the platform sends the frame again.
   */
  private async fenced(live: Live): Promise<boolean> {
    if (!live.fence) return true;
    if (live.late) return false;
    try {
      if (await live.fence.holds()) return true;
    } catch (error) {
      live.socket.close(
        CLOSE.tryAgain,
        `not recorded: the lease could not be checked (${(error as Error).message})`.slice(0, 120),
      );
      return false;
    }
    live.late = true;
    live.queue.length = 0;
    this.options.logger.warn(
      { channel: live.view.channel, botId: live.view.botId },
      "another instance holds this connection now (the lease's fence moved on): its events are left to it",
    );
    return false;
  }

  /** Run one event through the pipeline; false when the store could not record it. */
  private async record(live: Live, body: Buffer, now: number, turn: InOrder): Promise<boolean> {
    try {
      await this.options.deliver(
        live.view.channel,
        {
          headers: live.headers,
          body,
          query: live.query,
          now,
          authenticated: true,
          ...(live.view.botId ? { bot: live.view.botId } : {}),
        },
        turn,
      );
      live.view.lastEventAt = now;
      return true;
    } catch (error) {
      // Refused frames are counted and trailed by the pipeline. A frame the store could not
      // record is lost unless the platform sends it again: close, so the reconnect shows the outage.
      if (isIntakeError(error) && error.status === 503) {
        live.socket.close(CLOSE.tryAgain, `not recorded: ${error.message}`.slice(0, 120));
        return false;
      }
      return true;
    }
  }
}
