import pRetry, { AbortError } from 'p-retry';
import { sleep } from '../clock.js';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../metrics/index.js';
import { standardWebhooks } from '../signing.js';
import type { OutboxRecord, Store } from '../store/types.js';
import { outputJson } from './output.js';

/** Pending records looked at per pass; a session's later records wait behind its earliest. */
const WINDOW = 2_000;

class PushError extends Error {
  override name = 'PushError';
  constructor(message: string, readonly retryAfterMs?: number) {
    super(message);
  }
}

export interface AgentPushOptions {
  config: Config['agent'];
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
}

/**
 * Pushes every outbox record to `agent.url`, signed per Standard Webhooks. Reads from the
 * durable outbox, so a restart resumes where it stopped. One session's records go one at a
 * time, in seq order; different sessions go concurrently up to `agent.concurrency`. Network
 * errors, timeouts, 408, 429 and 5xx are retried with jittered backoff (Retry-After honoured)
 * up to `agent.retries` attempts; any other 4xx, or exhausted retries, go to dead letters.
 */
export class AgentPush {
  private readonly busySessions = new Set<string>();
  private readonly inflight = new Set<string>();
  /** Ids finished since the current pass read the outbox: its snapshot may still list them. */
  private readonly finished = new Set<string>();
  private active = 0;
  private pumping = false;
  private again = false;
  private closed = false;
  private readonly stop = new AbortController();
  private readonly dispatcher = new Agent({ keepAliveTimeout: 10_000 });
  /** Records waiting for delivery (store count at start, then kept in step). */
  pending = 0;
  dead = 0;

  constructor(private readonly options: AgentPushOptions) {}

  get url(): string {
    return this.options.config.url as string;
  }

  async start(): Promise<void> {
    this.pending = await this.options.store.countByState('pending');
    this.dead = await this.options.store.countByState('dead');
    if (this.pending > 0) this.options.logger.info({ pending: this.pending }, 'resuming delivery of undelivered messages');
    this.nudge();
  }

  /** A record entered the outbox in state pending. */
  added(): void {
    this.pending++;
    this.nudge();
  }

  /** Whether ingest should refuse new deliveries (backpressure). */
  get saturated(): boolean {
    return this.pending >= this.options.config.maxPending;
  }

  /** Look for records to send (coalesced: one pass at a time, another if asked meanwhile). */
  nudge(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump().finally(() => {
      this.pumping = false;
      if (this.again) {
        this.again = false;
        this.nudge();
      }
    });
  }

  private async pump(): Promise<void> {
    const { concurrency } = this.options.config;
    if (this.active >= concurrency) return;
    let records: OutboxRecord[];
    this.finished.clear();
    try {
      records = await this.options.store.pendingDeliveries(WINDOW);
    } catch (error) {
      this.options.logger.error({ err: error }, 'cannot read the outbox; delivery paused for a second');
      const retry = setTimeout(() => this.nudge(), 1_000);
      retry.unref();
      return;
    }
    const blocked = new Set(this.busySessions);
    for (const record of records) {
      if (this.active >= concurrency || this.closed) break;
      if (this.finished.has(record.id)) continue;
      if (this.inflight.has(record.id) || blocked.has(record.sessionKey)) {
        blocked.add(record.sessionKey); // keep a session's later records behind its earlier one
        continue;
      }
      blocked.add(record.sessionKey);
      this.busySessions.add(record.sessionKey);
      this.inflight.add(record.id);
      this.active++;
      void this.deliver(record).finally(() => {
        this.finished.add(record.id);
        this.active--;
        this.inflight.delete(record.id);
        this.busySessions.delete(record.sessionKey);
        this.nudge();
      });
    }
  }

  private async deliver(record: OutboxRecord): Promise<void> {
    const { config, metrics, logger, clock, store } = this.options;
    const body = outputJson(record);
    let attempts = record.attempts;
    try {
      await pRetry(async () => {
        attempts++;
        await this.post(record, body);
      }, {
        retries: Math.max(0, config.retries - 1),
        minTimeout: config.minBackoffMs,
        maxTimeout: Math.min(config.maxBackoffMs, 2_147_483_647),
        factor: 2,
        randomize: true,
        signal: this.stop.signal,
        onFailedAttempt: async ({ error, retriesLeft }) => {
          if (retriesLeft > 0) metrics.deliveryResult(record.channel, 'retried');
          logger.warn({ channel: record.channel, id: record.id, seq: record.seq, attempt: attempts, reason: error.message }, 'push to agent failed');
          const wait = error instanceof PushError ? error.retryAfterMs : undefined;
          if (wait && retriesLeft > 0) await sleep(Math.min(wait, config.maxBackoffMs), this.stop.signal);
        },
      });
      await store.setDelivery(record.id, { state: 'delivered', attempts, now: clock.now() });
      this.pending--;
      metrics.deliveryResult(record.channel, 'delivered');
      metrics.deliveryLatency.observe((clock.now() - record.createdAt) / 1000);
    } catch (error) {
      if (this.stop.signal.aborted) return; // shutting down: stays pending for the next start
      const lastError = (error as Error).message;
      await store.setDelivery(record.id, { state: 'dead', attempts, lastError, now: clock.now() }).catch(() => undefined);
      this.pending--;
      this.dead++;
      metrics.deliveryResult(record.channel, 'dead');
      logger.error({ channel: record.channel, id: record.id, seq: record.seq, attempts, reason: lastError }, 'push to agent gave up; message moved to dead letters');
    }
  }

  private async post(record: OutboxRecord, body: string): Promise<void> {
    const { config, clock } = this.options;
    const timestamp = Math.floor(clock.now() / 1000);
    let response;
    try {
      response = await request(this.url, {
        method: 'POST',
        dispatcher: this.dispatcher,
        signal: AbortSignal.any([AbortSignal.timeout(config.timeoutMs), this.stop.signal]),
        headers: {
          'content-type': 'application/json',
          'webhook-id': record.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': standardWebhooks.sign(config.secret as string, record.id, timestamp, body),
          'user-agent': 'agent-intake',
        },
        body,
      });
    } catch (error) {
      throw new PushError(`network: ${(error as Error).message}`);
    }
    response.body.resume();
    const status = response.statusCode;
    if (status >= 200 && status < 300) return;
    const retryable = status === 408 || status === 429 || status >= 500;
    const header = response.headers['retry-after'];
    const seconds = Number(Array.isArray(header) ? header[0] : header);
    const error = new PushError(`agent answered HTTP ${status}`, Number.isFinite(seconds) ? seconds * 1000 : undefined);
    if (!retryable) throw new AbortError(error);
    throw error;
  }

  /** Send dead letters again: one by id, or all. Returns how many were re-queued. */
  async retryDead(id?: string): Promise<number> {
    const { store, clock } = this.options;
    const records = id === undefined ? await store.deadLetters(Number.MAX_SAFE_INTEGER) : [await store.outboxGet(id)].filter((r): r is OutboxRecord => r?.state === 'dead');
    for (const record of records) {
      await store.setDelivery(record.id, { state: 'pending', attempts: 0, now: clock.now() });
      this.pending++;
      this.dead--;
    }
    this.nudge();
    return records.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stop.abort();
    await this.dispatcher.close().catch(() => undefined);
  }
}

