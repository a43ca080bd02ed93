import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { LeaseFence } from '../events/connection.js';
import type { Leases } from '../core/ports/index.js';

export interface LeaseKeeperOptions {
  /** The lease's name in the store (`conn:<channel>`). */
  name: string;
  /** This instance. */
  holder: string;
  /** How long a lease lasts unrenewed: a survivor takes it over within this after its holder died. */
  leaseMs: number;
  clock: Clock;
  logger: Logger;
  /** Where the lease is kept (the store's role). */
  leases: Leases;
  /** This instance took the lease: start what it guards, its work fenced by `fence`. */
  gained(fence: LeaseFence): void;
  /** This instance lost it (another holds it, or it could not renew in time): stop at once. */
  lost(): Promise<void>;
}

/**
 * Holds a named store lease for as long as it can and runs what it guards only meanwhile. It
 * asks every `leaseMs / 3`; a holder that could not renew stops what it guards before its lease
 * can run out in the store (a timer set at each renewal, so a store that hangs is covered too),
 * so two instances never run it at once: the survivor's next ask after the lease ran out wins.
 */
export class LeaseKeeper {
  private readonly everyMs: number;
  private held = false;
  /** The fence of the hand this instance holds. */
  private token: number | undefined;
  private stopped = false;
  private timer: unknown;
  private expiry: unknown;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: LeaseKeeperOptions) {
    this.everyMs = Math.max(10, Math.floor(options.leaseMs / 3));
  }

  get holding(): boolean {
    return this.held;
  }

  start(): void {
    this.running = this.ask();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.options.clock.setTimeout(() => {
      this.running = this.ask();
    }, this.everyMs);
  }

  private async ask(): Promise<void> {
    const { clock, name, holder, leaseMs } = this.options;
    const asked = clock.now();
    try {
      const fence = await this.options.leases.holdLease(name, holder, leaseMs, asked);
      if (this.stopped) return;
      if (fence === undefined) {
        if (this.held) await this.lose('another instance holds it now');
      } else {
        // Stop what the lease guards before the store could give it to another: one ask early.
        clock.clearTimeout(this.expiry);
        this.expiry = clock.setTimeout(
          () => void this.lose('it could not be renewed in time'),
          Math.max(0, asked + leaseMs - this.everyMs - clock.now()),
        );
        if (!this.held) {
          this.held = true;
          this.token = fence;
          this.options.logger.info({ lease: name, holder, fence }, 'lease taken');
          this.options.gained(this.fenceOf(fence));
        }
      }
    } catch (error) {
      this.options.logger.warn({ err: error, lease: name }, 'lease could not be asked for; asking again');
    } finally {
      this.schedule();
    }
  }

  /**
   * The work of one hand, checked by the store: a refusal (the lease changed hands while this
   * instance was paused or cut off, before its own timer said so) stops what the lease guards now.
   */
  private fenceOf(fence: number): LeaseFence {
    const { name, clock } = this.options;
    const refused = (): false => {
      if (this.held && this.token === fence) void this.lose('another instance took it over (its fence moved on)');
      return false;
    };
    return {
      holds: async () => (await this.options.leases.fenceHolds(name, fence)) || refused(),
      put: async (key, value, ttlMs) =>
        (await this.options.leases.fencedPut(name, fence, key, value, ttlMs, clock.now())) || refused(),
    };
  }

  private async lose(why: string): Promise<void> {
    if (!this.held) return;
    this.held = false;
    this.token = undefined;
    this.options.clock.clearTimeout(this.expiry);
    this.options.logger.warn({ lease: this.options.name, holder: this.options.holder }, `lease lost: ${why}`);
    await this.options.lost();
  }

  /** Stop asking; when held, stop what it guards, then give the lease back so another instance takes it at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.options.clock.clearTimeout(this.timer);
    this.options.clock.clearTimeout(this.expiry);
    await this.running;
    if (!this.held) return;
    this.held = false;
    this.token = undefined;
    await this.options.lost();
    await this.options.leases.dropLease(this.options.name, this.options.holder).catch((error: unknown) => {
      this.options.logger.warn(
        { err: error, lease: this.options.name },
        'lease could not be given back; it runs out by itself',
      );
    });
  }
}
