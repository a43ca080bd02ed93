import type { Logger } from 'pino';
import { OutputClaims } from '../claims/claims.js';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/schema.js';
import type { Store } from '../core/ports/index.js';
import type { TraceEntry } from '../events/trace.js';
import type { HttpPorts } from '../http/ports.js';
import type { Metrics } from '../metrics/index.js';
import { pushAttempts } from './operations.js';
import type { AgentTurns } from '../turns/turns.js';

/**
 * On a store other instances share, how often the delivery counts (`agent.maxPending`'s
 * backpressure) are read again: they commit and answer claims too. The push's poll period.
 */
const SHARED_COUNTS_MS = 250;

export interface WorkerClaimsOptions {
  config: Config;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  record(entry: Omit<TraceEntry, 'n'>): void;
  /** The agent turns: where a channel keeps them (`turnsOn`), an ack closes one. */
  turns: AgentTurns;
  turnsOn: boolean;
}

/**
 * Agent workers pull outputs (src/claims/) when `agent.claims` is set, in place of the push:
 * outcomes counted and trailed as push attempts are, and the claims' own metrics.
 */
export function workerClaims(options: WorkerClaimsOptions): OutputClaims | undefined {
  const { config, store, clock, logger, metrics, record, turns, turnsOn } = options;
  const settings = config.agent.claims;
  if (!settings) return undefined;
  const wait = metrics.histogram(
    'inbox_claim_wait_seconds',
    "From an output's commit to its first claim by a worker",
    [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
  );
  const claims = new OutputClaims({
    config: settings,
    backoff: config.agent,
    maxPending: config.agent.maxPending,
    store,
    clock,
    logger,
    // Half the sockets: the rest stay for the workers' acks, webhooks and event streams.
    maxPolls: Math.max(1, Math.floor(config.server.maxConnections / 2)),
    ...(store.shared ? { refreshMs: SHARED_COUNTS_MS } : {}),
    onOutcome: pushAttempts(clock, metrics, record),
    onFirstClaim: (waitedMs) => wait.observe(Math.max(0, waitedMs) / 1000),
    ...(turnsOn ? { turns } : {}),
  });
  metrics.gauge(
    'inbox_claims_outstanding',
    'Claims this instance handed out whose lease runs and that no worker answered yet (here: one answered on another instance counts until its lease ends)',
    () => claims.outstandingCount(),
  );
  metrics.counterFrom(
    'inbox_claim_expired_total',
    'Claims whose lease ran out before an answer, found as their output was claimed again (on this instance)',
    () => claims.expired,
  );
  metrics.gauge('inbox_claim_polls_waiting', 'Claim polls waiting on this instance', () => claims.waiting);
  return claims;
}

/** Dead letters, listed and requeued as the push's or the claims' (whichever delivers to the agent). */
export function deadLetterPort(
  store: Store,
  delivery: { retryDead(id: string | undefined, limit: number): Promise<number> } | undefined,
): HttpPorts['deadLetters'] {
  return (
    delivery && {
      count: async () => (await store.deliveryCounts()).dead,
      list: (limit) => store.deadLetters(limit),
      retry: (id, limit) => delivery.retryDead(id, limit),
    }
  );
}
