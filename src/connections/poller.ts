import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { isIntakeError } from '../core/errors.js';
import {
  PollError,
  type ConnectionEvent,
  type ConnectionView,
  type LeaseFence,
  type PollSpec,
} from '../events/connection.js';
import type { InOrder, RawDelivery } from '../events/transport.js';
import type { SharedValues } from '../core/ports/index.js';
import { backoffMs } from '../core/backoff.js';
import type { LinkTarget } from './links.js';
import { inOrder } from './in-order.js';

export interface PollerOptions {
  target: LinkTarget;
  poll: PollSpec;
  instance: string;
  clock: Clock;
  logger: Logger;
  /** Where the cursor is read (the store: it survives a restart and is every instance's); it is written through the lease's fence. */
  shared: SharedValues;
  /** Run one update through the pipeline; resolves once it is recorded. */
  deliver(channel: string, delivery: RawDelivery, turn: InOrder): Promise<unknown>;
  counted(channel: string, transport: string, event: ConnectionEvent): void;
  changed(): void;
  /** In [0, 1): the jitter of the backoff. */
  random(): number;
}

/** A cursor is kept this long after its last poll (Telegram keeps unconfirmed updates 24 h). */
const CURSOR_TTL_MS = 7 * 24 * 3_600_000;

/**
 * Polls one channel's platform while this instance holds its lease: each poll starts at the
 * stored cursor; its updates go through the pipeline one at a time, in order, and the cursor
 * moves past them only once all are recorded. An update the store could not record stops the
 * batch, keeps the cursor, and the next poll asks again (recorded ones come back as duplicates,
 * refused by their claims); an update the pipeline refuses (malformed) is counted and passed.
 */
export class Poller {
  private running = false;
  private abort: AbortController | undefined;
  private loop: Promise<void> = Promise.resolve();
  private wake: (() => void) | undefined;
  private readonly view: ConnectionView;
  /** Times the poll came up (answered after a start or a failure). */
  private opens = 0;
  private started = false;
  /** The lease this poll runs under: nothing is recorded, and no cursor kept, once it changed hands. */
  private fence: LeaseFence | undefined;

  constructor(private readonly options: PollerOptions) {
    const { target, poll, instance, clock } = options;
    this.view = {
      ...target,
      botId: poll.botId,
      role: 'Universal',
      instance,
      state: 'closed',
      connectedAt: clock.now(),
      lastEventAt: null,
      lastHeartbeatAt: null,
      reconnects: 0,
    };
  }

  /** The poller's connection while this instance polls; undefined otherwise. */
  current(): ConnectionView | undefined {
    return this.started ? { ...this.view } : undefined;
  }

  start(fence: LeaseFence): void {
    if (this.running) return;
    this.running = true;
    this.fence = fence;
    this.started = true;
    this.view.state = 'connecting';
    this.view.connectedAt = this.options.clock.now();
    this.options.changed();
    this.loop = this.run();
  }

  private get cursorName(): string {
    return `cursor:${this.options.target.channel}`;
  }

  private async run(): Promise<void> {
    const { target, poll, clock, logger, shared } = this.options;
    const fence = this.fence as LeaseFence;
    let failures = 0;
    while (this.running) {
      const abort = (this.abort = new AbortController());
      let stall: unknown;
      try {
        const cursor = await shared.sharedGet(this.cursorName, clock.now());
        // On the injected clock: a poll the platform never answers is given up and asked again.
        stall = clock.setTimeout(
          () => abort.abort(new PollError(`getUpdates stalled: no answer within ${poll.stallMs} ms`)),
          poll.stallMs,
        );
        const polled = await poll.next(cursor, abort.signal).catch((error: unknown) => {
          throw abort.signal.aborted && this.running ? abort.signal.reason : error;
        });
        clock.clearTimeout(stall);
        if (!this.running) return;
        this.seen();
        failures = 0;
        // A holder paused past its lease: the survivor polls these updates again; its keeper stops this one.
        if (polled.bodies.length > 0 && !(await fence.holds())) return this.late();
        if (!(await this.record(polled.bodies))) {
          failures++;
          await this.pause(poll.reconnectMinMs);
          continue;
        }
        if (
          polled.cursor !== undefined &&
          polled.cursor !== cursor &&
          !(await fence.put(this.cursorName, polled.cursor, CURSOR_TTL_MS))
        )
          return this.late();
      } catch (error) {
        clock.clearTimeout(stall);
        if (!this.running) return;
        failures++;
        const hint = error instanceof PollError ? error.hint : undefined;
        const asked = error instanceof PollError ? error.retryAfterMs : undefined;
        const waitMs = hint ? poll.reconnectMaxMs : Math.max(this.backoffMs(failures), asked ?? 0);
        if (this.view.state !== 'connecting') {
          this.view.state = 'connecting';
          this.options.changed();
        }
        const message = (error as Error).message;
        if (hint) logger.error({ channel: target.channel, waitMs }, `${message}: ${hint}`);
        else logger.warn({ channel: target.channel, waitMs, failures }, `poll failed: ${message}`);
        await this.pause(waitMs);
      }
    }
  }

  /** The lease changed hands under this poll: what it had is left to the new holder. */
  private late(): void {
    this.options.logger.warn(
      { channel: this.options.target.channel },
      "another instance polls this channel now (the lease's fence moved on): this one stops",
    );
  }

  /** A poll answered: the connection is up (again, after a start or a failure). */
  private seen(): void {
    this.view.lastHeartbeatAt = this.options.clock.now();
    if (this.view.state === 'open') return;
    this.options.counted(
      this.options.target.channel,
      this.options.target.transport,
      this.opens > 0 ? 'reconnect' : 'open',
    );
    this.view.state = 'open';
    this.view.reconnects = this.opens++;
    this.view.connectedAt = this.options.clock.now();
    this.options.changed();
  }

  /**
   * Record a page's bodies in order, in one store step (inOrder); false when the store could not
   * record one (the cursor stays, and the next poll asks for the page again: what was recorded of
   * it is then a duplicate).
   */
  private async record(bodies: Buffer[]): Promise<boolean> {
    const { target, clock } = this.options;
    const now = clock.now();
    const recorded = await inOrder(bodies, async (body, turn) => {
      try {
        await this.options.deliver(
          target.channel,
          { headers: {}, body, query: new URLSearchParams(), now, authenticated: true },
          turn,
        );
        this.view.lastEventAt = now;
      } catch (error) {
        if (isIntakeError(error) && error.status === 503) {
          this.options.logger.warn(
            { channel: target.channel, err: error },
            'a polled update could not be recorded; the next poll asks for it again',
          );
          return false;
        }
        // Refused (malformed): counted and trailed by the pipeline; passing it keeps the channel moving.
      }
      return true;
    });
    return !recorded.includes(false);
  }

  /** The wait after `failures` failed polls in a row: the first waits about `reconnectMinMs` (an answered poll is a healthy connection). */
  backoffMs(failures: number): number {
    const { reconnectMinMs: minMs, reconnectMaxMs: maxMs } = this.options.poll;
    return backoffMs(failures - 1, { minMs, maxMs }, this.options.random);
  }

  /** Wait on the injected clock, or until stopped. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.options.clock.setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        this.options.clock.clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Stop polling: the poll in flight is aborted (what it had not returned is asked again by the next holder). */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.abort?.abort();
    this.wake?.();
    await this.loop;
    if (this.view.state === 'open')
      this.options.counted(this.options.target.channel, this.options.target.transport, 'close');
    this.view.state = 'closed';
    this.options.changed();
  }
}
