import type { WebSocket } from 'ws';
import type { Clock } from '../core/clock.js';
import { IntakeError, UnavailableError } from '../core/errors.js';
import type { ConnectionView } from '../events/connection.js';

/** Bytes queued on a socket past which no action is sent on it: the bot stopped reading. */
const MAX_BUFFERED = 1 << 20;

/** An action sent on a socket, waiting for the frame that answers it. */
interface Pending {
  resolve(body: unknown): void;
  reject(error: Error): void;
  timer: unknown;
  socket: WebSocket;
}

/**
 * The actions sent on bot sockets (`{action, params, echo}`), each waiting for the frame that
 * answers it (the same `echo`, on the same socket), its timeout, or its socket's close.
 */
export class Calls {
  private readonly pending = new Map<string, Pending>();
  private echoes = 0;

  /** `instance` starts every echo, so an answer relayed between instances names its own; `clock` times the answers. */
  constructor(
    private readonly instance: string,
    private readonly clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ) {}

  /** Send `action` on the socket of the connection `view` and resolve with the bot's answer. */
  send(socket: WebSocket, view: ConnectionView, action: string, params: unknown, timeoutMs: number): Promise<unknown> {
    const context = { channel: view.channel, stage: 'connections' };
    if (socket.bufferedAmount > MAX_BUFFERED) {
      throw new UnavailableError(
        'bot_not_reading',
        `Bot ${view.botId} on channel "${view.channel}" is not reading its socket (${socket.bufferedAmount} bytes waiting): the action was not sent`,
        5,
        context,
      );
    }
    const echo = `${this.instance}:${++this.echoes}`;
    return new Promise((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.settle(echo)?.reject(
          new IntakeError(
            'action_timeout',
            504,
            `Bot ${view.botId || '(id not known yet)'} on channel "${view.channel}" did not answer "${action}" within ${timeoutMs} ms`,
            context,
          ),
        );
      }, timeoutMs);
      this.pending.set(echo, { resolve, reject, timer, socket });
      socket.send(JSON.stringify({ action, params, echo }));
    });
  }

  /** A frame on `socket` answered `echo`: an action sent on another socket is not answered by it. */
  answered(socket: WebSocket, echo: string, body: unknown): void {
    if (this.pending.get(echo)?.socket === socket) this.settle(echo)?.resolve(body);
  }

  /** The socket of `view` closed: its actions get no answer now. */
  disconnected(socket: WebSocket, view: ConnectionView): void {
    for (const [echo, waiting] of this.pending) {
      if (waiting.socket === socket)
        this.settle(echo)?.reject(
          new IntakeError(
            'bot_disconnected',
            502,
            `Bot ${view.botId} on channel "${view.channel}" disconnected before it answered the action`,
            { channel: view.channel, stage: 'connections' },
          ),
        );
    }
  }

  /** Take a pending action out of the table (once: a late answer after a timeout finds nothing). */
  private settle(echo: string): Pending | undefined {
    const waiting = this.pending.get(echo);
    if (!waiting) return undefined;
    this.pending.delete(echo);
    this.clock.clearTimeout(waiting.timer);
    return waiting;
  }
}
