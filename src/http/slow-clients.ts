import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { systemClock, type Clock } from '../core/clock.js';

/** The `server.*` timeouts the guard enforces. */
export interface SlowClientLimits {
  /** A new socket without a complete request this long is cut off (between kept-alive requests: see keepAliveTimeoutMs). */
  headersTimeoutMs: number;
  /** A request whose body has not arrived this long after its headers is cut off. */
  requestTimeoutMs: number;
  /** Node closes a kept-alive socket idle this long; the guard never cuts one between requests sooner. */
  keepAliveTimeoutMs: number;
}

/** Longest interval between two sweeps (a cut comes up to two of them late). */
const SWEEP_MAX_MS = 1_000;

/** What the guard knows of one socket. */
interface Watch {
  /** The socket's latest request and its response (a kept-alive socket serves several). */
  req: IncomingMessage | undefined;
  res: ServerResponse | undefined;
  /** When that request's headers had arrived. */
  requestAt: number;
  /** When the socket was first seen waiting for a request (undefined: not waiting, or not yet seen). */
  waitingSince: number | undefined;
  /** Bytes read when the sweep first saw the current response being written (undefined: not yet). */
  answeringBytes: number | undefined;
}

const watchOf = Symbol('slow-client watch');
type Watched = Socket & { [watchOf]?: Watch };

/**
 * Cuts off clients too slow to send their request (slowloris: headers or a body dribbled a
 * byte at a time), with the `408` of the server's `clientError` handler, and costs nothing
 * while no connection is open.
 *
 * Node's own check (`connectionsCheckingInterval`) does the same, but on a timer that wakes
 * the process even with no connection at all, and every wake costs CPU.
 * The guard sweeps its sockets every half headers timeout (at most every second) only while
 * there are sockets, and stops one sweep after the last one closes. Node's check stays on at
 * its default 30 s, as a backstop.
 *
 * A socket is "waiting" from its arrival, and again once its response has ended: if no request
 * comes within the headers timeout (after an answer: max(headers timeout, keep-alive timeout),
 * as an idle kept-alive socket is Node's to close), it is sending headers too slowly. A request
 * whose body is not complete within the request timeout of its headers is cut as well. A socket whose
 * response is being written (an event stream for hours) is not cut, unless bytes of a next
 * request arrive meanwhile and its headers do not complete within that same limit. Each
 * clock starts at the sweep that first sees its state, so a cut comes up to two sweeps late.
 */
export class SlowClientGuard {
  private readonly sockets = new Set<Watched>();
  private timer: unknown;
  private readonly waitLimitMs: number;
  private readonly sweepMs: number;
  private listener: RequestListener;

  constructor(
    private readonly server: Server,
    private readonly limits: SlowClientLimits,
    listener: RequestListener,
    /** Stamps the sockets' states and arms the sweep. */
    private readonly clock: Pick<Clock, 'now' | 'setInterval' | 'clearInterval'> = systemClock,
  ) {
    this.listener = listener;
    this.waitLimitMs = Math.max(limits.headersTimeoutMs, limits.keepAliveTimeoutMs);
    this.sweepMs = Math.max(10, Math.min(SWEEP_MAX_MS, Math.floor(limits.headersTimeoutMs / 2)));
    server.on('connection', (socket: Watched) => this.watch(socket));
    server.on('request', (req, res) => this.request(req, res));
  }

  /** Hand the requests to another listener from now on (the app, once it has started). */
  serve(listener: RequestListener): void {
    this.listener = listener;
  }

  /** Whether the sweep timer runs (it must not while no socket is open). */
  get sweeping(): boolean {
    return this.timer !== undefined;
  }

  private request(req: IncomingMessage, res: ServerResponse): void {
    const watch = (req.socket as Watched)[watchOf];
    if (watch) {
      watch.req = req;
      watch.res = res;
      watch.requestAt = this.clock.now();
      watch.waitingSince = undefined;
      watch.answeringBytes = undefined;
    }
    this.listener(req, res);
  }

  private watch(socket: Watched): void {
    socket[watchOf] = {
      req: undefined,
      res: undefined,
      requestAt: 0,
      waitingSince: this.clock.now(),
      answeringBytes: undefined,
    };
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    if (this.timer === undefined) this.timer = this.clock.setInterval(() => this.sweep(), this.sweepMs);
  }

  /** One pass over the open sockets; the timer stops on the first pass that finds none. */
  sweep(): void {
    if (this.sockets.size === 0) {
      this.clock.clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = this.clock.now();
    for (const socket of this.sockets) {
      const watch = socket[watchOf]!;
      const { req, res } = watch;
      if (req && !req.complete) {
        if (now - watch.requestAt >= this.limits.requestTimeoutMs) this.cut(socket, res);
      } else if (res && !res.writableEnded) {
        // The service is answering (an event stream answers for hours). Bytes arriving meanwhile
        // are a pipelined request whose headers have not ended: they get the same limit.
        if (watch.answeringBytes === undefined || socket.bytesRead === watch.answeringBytes) {
          watch.answeringBytes = socket.bytesRead;
          watch.waitingSince = undefined;
        } else if (watch.waitingSince === undefined) {
          watch.waitingSince = now;
        } else if (now - watch.waitingSince >= this.waitLimitMs) {
          this.cut(socket, res);
        }
      } else if (watch.waitingSince === undefined) {
        watch.waitingSince = now;
      } else if (now - watch.waitingSince >= (req ? this.waitLimitMs : this.limits.headersTimeoutMs)) {
        // The answered response is not the one cut: a new request's headers are late.
        this.cut(socket, undefined);
      }
    }
  }

  private cut(socket: Watched, res: ServerResponse | undefined): void {
    this.sockets.delete(socket);
    if (res?.headersSent || !socket.writable) {
      socket.destroy();
      return;
    }
    // The server's clientError handler answers 408 and closes, as for Node's own check.
    const error = Object.assign(new Error('The client did not send its request in time'), {
      code: 'ERR_HTTP_REQUEST_TIMEOUT',
    });
    this.server.emit('clientError', error, socket);
  }
}
