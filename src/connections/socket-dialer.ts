import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import type { Clock } from '../core/clock.js';
import {
  DialError,
  type DialSession,
  type LeaseFence,
  type RefreshFrame,
  type SocketDial,
} from '../events/connection.js';
import { backoffMs } from '../core/backoff.js';
import { wasHealthy } from './healthy.js';
import type { LinkTarget, Links } from './links.js';

export interface SocketDialerOptions {
  /** The connection's key among the links (one socket per channel). */
  key: string;
  target: LinkTarget;
  dial: SocketDial;
  /** Largest frame, bytes (`server.bodyLimitBytes`). */
  maxPayload: number;
  /** How long the `whoAmI` action waits. */
  actionTimeoutMs: number;
  clock: Clock;
  logger: Logger;
  /** In [0, 1): the jitter of the reconnect backoff. */
  random(): number;
}

/** How long the bot has to complete a WebSocket handshake. */
const HANDSHAKE_MS = 10_000;
/** How long a stop waits for the bot to answer our close before it drops the socket. */
const CLOSE_WAIT_MS = 2000;
/** Failures past which every wait is the longest: a connection the platform turned off waits there until one is healthy. */
const TOP = 30;

/**
 * Dials a bot's WebSocket and keeps it open: reconnects after a failure or a close with the
 * backoff every dialled or polled connection shares (from `reconnectMinMs` doubling up to
 * `reconnectMaxMs`, jittered). A socket that ends before it was healthy (open 30 s, with frames) counts as a
 * failure like one that never opened, so the backoff starts over only after a healthy one. An
 * open socket joins `links`, which reads its frames like those of a bot that dialled us.
 */
export class SocketDialer {
  private socket: WebSocket | undefined;
  /** Connections in a row that failed or ended before they were healthy. */
  private failures = 0;
  private timer: unknown;
  private running = false;
  private asking: AbortController | undefined;
  private fence: LeaseFence | undefined;

  constructor(
    private readonly options: SocketDialerOptions,
    private readonly links: Links,
  ) {}

  /** Dial and keep dialling; under `fence`, the lease this instance holds the connection by. */
  start(fence?: LeaseFence): void {
    if (this.running) return;
    this.running = true;
    this.fence = fence;
    this.failures = 0;
    this.dial();
  }

  /** The wait before the next attempt after `failures` failed ones in a row. */
  backoffMs(failures: number): number {
    const { reconnectMinMs: minMs, reconnectMaxMs: maxMs } = this.options.dial;
    return backoffMs(failures, { minMs, maxMs }, this.options.random);
  }

  /** A socket ended (closed, or asked to move): the backoff starts over only if it was healthy. */
  private ended(openedAt: number | undefined, frames: number): void {
    this.failures = wasHealthy(openedAt, frames, this.options.clock.now()) ? 0 : this.failures + 1;
  }

  /** Dial again in `waitMs`, on the injected clock. */
  private later(waitMs: number): void {
    this.timer = this.options.clock.setTimeout(() => {
      if (this.running) this.dial();
    }, waitMs);
  }

  private dial(): void {
    const { target, dial, logger } = this.options;
    this.links.connecting(this.options.key, target, { botId: '', role: 'Universal' });
    if (!dial.open) {
      this.connect(dial.url);
      return;
    }
    // A platform that hands out a URL per connection (Slack's apps.connections.open).
    const abort = new AbortController();
    this.asking = abort;
    dial.open(abort.signal).then(
      (url) => {
        if (this.asking === abort) this.asking = undefined;
        if (this.running) this.connect(url);
      },
      (error: Error) => {
        if (this.asking === abort) this.asking = undefined;
        if (!this.running) return;
        this.failures++;
        // The platform said when to ask again (Discord's session starts reset_after): not sooner.
        const waitMs = Math.max(
          this.backoffMs(this.failures),
          error instanceof DialError ? (error.retryAfterMs ?? 0) : 0,
        );
        logger.warn({ channel: target.channel, waitMs, err: error }, `could not get a socket URL: ${error.message}`);
        this.later(waitMs);
      },
    );
  }

  private connect(url: string): void {
    const { key, target, dial, logger } = this.options;
    const socket = new WebSocket(url, {
      headers: { ...dial.headers },
      maxPayload: this.options.maxPayload,
      handshakeTimeout: HANDSHAKE_MS,
    });
    this.socket = socket;
    const { clock } = this.options;
    let openedAt: number | undefined;
    let frames = 0;
    let session: DialSession | undefined;
    socket.on('message', () => {
      frames++;
    });
    socket.once('open', () => {
      openedAt = clock.now();
      session = dial.session?.({
        send: (text) => {
          if (socket.readyState === socket.OPEN) socket.send(text);
        },
        close: (code, reason) => socket.close(code, reason),
        setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
        clearTimeout: (handle) => clock.clearTimeout(handle),
        now: () => clock.now(),
        random: () => this.options.random(),
        ...(this.fence ? { fence: this.fence } : {}),
      });
      // The platform may ask us to move: dial the next socket, which replaces this one once open;
      // at once after a healthy socket, else after the backoff (a platform that asks after every
      // hello is not dialled in a loop).
      const refresh = (asked: RefreshFrame): void => {
        if (!this.running || this.socket !== socket) return;
        this.socket = undefined; // its close is no failure: the next socket is on its way
        this.ended(openedAt, frames);
        if (asked.disabled) {
          // Turned off on the platform's side: only a person can fix it; ask again at the longest wait.
          this.failures = Math.max(this.failures, TOP);
          logger.error(
            { channel: target.channel, reason: asked.reason },
            `${asked.disabled}; asking again in ${Math.round(dial.reconnectMaxMs / 1000)} s`,
          );
          socket.close(1000, 'turned off by the platform');
          this.later(dial.reconnectMaxMs);
          return;
        }
        this.later(this.failures === 0 ? 0 : this.backoffMs(this.failures));
      };
      this.links.attach(key, socket, target, { botId: '', role: 'Universal' }, {}, new URLSearchParams(), {
        refresh,
        ...(session ? { session } : {}),
        ...(this.fence ? { fence: this.fence } : {}),
      });
      void this.identify();
    });
    socket.on('error', (error) => {
      if (openedAt !== undefined) return; // the links log errors of an open socket
      const refused = /Unexpected server response: (401|403)/.exec(error.message);
      logger.warn(
        { channel: target.channel, url: redacted(url), err: error },
        refused
          ? `the bot refused our WebSocket (HTTP ${refused[1]}): check the channel's accessToken`
          : `could not connect to the bot: ${error.message}`,
      );
    });
    socket.once('close', (code, reason) => {
      const verdict = session?.closed(code, reason.toString());
      // A socket replaced by the next one (a refresh) ends without a reconnect of its own.
      if (this.socket !== socket) return;
      this.socket = undefined;
      if (!this.running) return;
      if (verdict?.next === 'stop') {
        // Retrying cannot help (a refused token): say so once, dial no more until restarted.
        logger.error(
          { channel: target.channel, code },
          `${verdict.why}; not reconnecting (fix the channel's settings and restart)`,
        );
        return;
      }
      this.ended(openedAt, frames);
      const waitMs = this.backoffMs(this.failures);
      logger.info({ channel: target.channel, waitMs }, 'bot socket closed; reconnecting');
      this.later(waitMs);
    });
  }

  /** Ask the bot who it is (`get_login_info`), so the connection and actions know its id before any event. */
  private async identify(): Promise<void> {
    const { key, target, dial, actionTimeoutMs } = this.options;
    if (!dial.whoAmI) return;
    try {
      const answer = await this.links.call(target.channel, dial.whoAmI.action, {}, undefined, actionTimeoutMs);
      const botId = dial.whoAmI.botIdOf(answer);
      if (botId) this.links.identify(key, botId);
    } catch (error) {
      this.options.logger.warn(
        { channel: target.channel, err: error },
        `the bot did not answer ${dial.whoAmI.action}; its id comes with its next meta event`,
      );
    }
  }

  /** Close the socket (1001) once the bot answered the close or `closeWaitMs` passed, and dial no more. */
  async stop(closeWaitMs = CLOSE_WAIT_MS): Promise<void> {
    this.running = false;
    this.options.clock.clearTimeout(this.timer);
    this.asking?.abort();
    const socket = this.socket;
    this.socket = undefined;
    if (socket && socket.readyState === socket.CONNECTING) socket.terminate();
    await this.links.close(
      (view) => view.channel === this.options.target.channel && view.transport === this.options.target.transport,
      closeWaitMs,
      'lease given up',
    );
    this.links.forget(this.options.key);
  }
}

/** A URL without its credentials or query (tokens), for logs. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}
