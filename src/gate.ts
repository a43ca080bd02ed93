import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import { UnavailableError } from './errors.js';
import type { Metrics } from './metrics/index.js';
import type { AgentPush } from './push/agent-push.js';

/** Retry-After of a 503 for a store that could not record, and how long readiness then fails. */
export const STORE_RETRY_AFTER_S = 5;

export interface GateOptions {
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The push to the agent, when configured: a full outbox refuses deliveries. */
  push: AgentPush | undefined;
  maxPending: number;
}

/**
 * Whether a delivery may come in now, and what readiness says: exactly when a delivery would
 * be refused with a 503 (shutting down, the outbox full, the store unable to record), so a
 * load balancer stops sending what would be refused anyway.
 */
export class Gate {
  private closingSince: number | undefined;
  /** A stop is coming (SIGTERM, `server.drainMs`): readiness fails while deliveries are still taken. */
  private drainingSince: number | undefined;
  /** The last admission failed (disk full, Redis away): readiness fails for the 503's Retry-After. */
  private admitFailing: { at: number; reason: string } | undefined;
  /** Deliveries being admitted now: a stop waits for them (they are answered 200). */
  private admitting = 0;
  private admitted: (() => void) | undefined;

  constructor(private readonly options: GateOptions) {}

  get closing(): boolean {
    return this.closingSince !== undefined;
  }

  /** Throws the 503 a delivery gets while the service takes none. */
  check(channel: string): void {
    if (this.closing) throw new UnavailableError('shutting_down', 'The service is shutting down; retry shortly', 5, { channel });
    const { push } = this.options;
    if (push?.saturated) {
      throw new UnavailableError('outbox_full', `${push.pending} messages are waiting for the agent (agent.maxPending ${this.options.maxPending}); retry later`, 30, { channel });
    }
  }

  /**
   * Run one admission step: counted while it runs (a stop waits for it), and a store failure
   * becomes the 503 that says nothing was recorded.
   */
  async admit<T>(channel: string, step: () => Promise<T>): Promise<T> {
    this.admitting++;
    try {
      const result = await step();
      this.admitFailing = undefined;
      return result;
    } catch (error) {
      this.admitFailing = { at: this.options.clock.now(), reason: (error as Error).message };
      this.options.metrics.storeError('admit');
      this.options.logger.error({ err: error, channel }, 'store unavailable; delivery refused');
      throw new UnavailableError('store_unavailable', 'The store is unreachable; nothing was recorded, retry later', STORE_RETRY_AFTER_S, { channel, cause: error });
    } finally {
      if (--this.admitting === 0) this.admitted?.();
    }
  }

  /** Fail readiness from now on (a load balancer stops sending) while still taking deliveries. */
  drain(): void {
    this.drainingSince ??= this.options.clock.now();
  }

  /** Refuse deliveries from now on; resolves once those being admitted are recorded. */
  async close(): Promise<void> {
    this.closingSince ??= this.options.clock.now();
    if (this.admitting > 0) await new Promise<void>((resolve) => { this.admitted = resolve; });
  }

  /** Reasons past the store's own ping (and a stop) that the service should get no traffic now. */
  problems(): string[] {
    const problems: string[] = this.drainingSince !== undefined && !this.closing ? ['draining: stopping soon (server.drainMs), deliveries still taken'] : [];
    const failing = this.admitFailing;
    if (failing && this.options.clock.now() - failing.at < STORE_RETRY_AFTER_S * 1000) problems.push(`the last delivery could not be recorded: ${failing.reason}`);
    const { push } = this.options;
    if (push?.saturated) problems.push(`outbox full: ${push.pending} undelivered (agent.maxPending ${this.options.maxPending})`);
    return problems;
  }
}
