import type { Clock } from './clock.js';
import type { Config } from './config/schema.js';
import type { FlushScheduler } from './debounce/scheduler.js';
import type { Gate } from './gate.js';
import type { StreamHub } from './http/event-stream.js';
import type { Metrics } from './metrics/index.js';
import type { TraceEntry } from './events/trace.js';
import type { Store } from './ports.js';
import type { AgentPush, AgentPushOptions } from './push/agent-push.js';

export interface OperationsOptions {
  config: Config;
  store: Store;
  gate: Gate;
  metrics: Metrics;
  scheduler: FlushScheduler;
  streams: StreamHub;
  push: AgentPush | undefined;
  /** Deliveries the correlator observed and marked as duplicates, counted by the pipeline. */
  counts: { observed: number; duplicates: number };
}

/** The operator's views of one instance: readiness, `/v1/stats`, and the gauges read at scrape. */
export function operations(options: OperationsOptions) {
  const { config, store, gate, metrics, scheduler, streams, push, counts } = options;

  function correlationStats(): { groups: number; observed: number; duplicates: number; evicted: number } {
    return { ...store.correlationStats(), ...counts };
  }

  /** Reasons the service should not get traffic now (empty when ready): exactly when ingest would answer 503. */
  async function readiness(): Promise<string[]> {
    const problems: string[] = gate.closing ? ['shutting down'] : [];
    try {
      await store.ping();
    } catch (error) {
      problems.push(`store unavailable: ${(error as Error).message}`);
    }
    problems.push(...gate.problems());
    return problems;
  }

  /** `/v1/stats`: per-channel counters, buffers, claims, correlation, outbox. */
  async function stats(): Promise<Record<string, unknown>> {
    if (push) await push.refresh().catch(() => undefined);
    return {
      channels: metrics.channelStats(),
      debounce: { open: await store.openBuffers(), flushing: scheduler.flushing },
      claims: store.claimStats(),
      correlator: correlationStats(),
      delivery: push
        ? { url: push.url, pending: push.pending, dead: push.dead, maxPending: config.agent.maxPending, saturated: push.saturated }
        : { url: null },
      store: store.kind,
      streams: streams.count,
    };
  }

  metrics.gauge('inbox_correlator_groups', 'Correlation groups alive', () => store.correlationStats().groups);
  metrics.counterFrom('inbox_correlator_observed_total', 'Deliveries the correlator observed', () => counts.observed);
  metrics.counterFrom('inbox_correlator_duplicates_total', 'Deliveries marked as duplicates of a logical event', () => counts.duplicates);
  metrics.counterFrom('inbox_correlator_evicted_total', 'Correlation groups evicted past correlation.maxGroups', () => store.correlationStats().evicted);
  if (push) {
    metrics.gauge('inbox_outbox_pending', 'Processed messages not yet delivered to the agent (outbox depth)', () => push.pending);
    metrics.gauge('inbox_outbox_dead', 'Messages in dead letters', () => push.dead);
    metrics.gauge('inbox_outbox_max_pending', 'agent.maxPending: past it ingest answers 503', () => config.agent.maxPending);
    metrics.gauge('inbox_backpressure', '1 while ingest is refused because the outbox is full', () => (push.saturated ? 1 : 0));
  }
  metrics.gauge('inbox_debounce_buffers_open', 'Debounce buffers currently open', () => store.openBuffers().catch(() => 0));
  metrics.gauge('inbox_event_streams_open', 'Event stream clients connected', () => streams.count);

  return { readiness, stats, correlationStats };
}

/** Every push attempt, counted, timed and written to the trail. */
export function pushAttempts(clock: Clock, metrics: Metrics, record: (entry: Omit<TraceEntry, 'n'>) => void): NonNullable<AgentPushOptions['onAttempt']> {
  return (pushed, outcome) => {
    metrics.deliveryResult(pushed.channel, outcome.state === 'retry' ? 'retried' : outcome.state);
    if (outcome.state === 'delivered') metrics.deliveryLatency.observe((clock.now() - pushed.createdAt) / 1000);
    record({
      at: clock.now(), channel: pushed.channel, kind: 'delivery', id: pushed.id, seq: pushed.seq, sessionKey: pushed.sessionKey,
      state: outcome.state === 'retry' ? 'pending' : outcome.state, attempts: outcome.attempts,
      ...(outcome.state === 'delivered' ? {} : { lastError: outcome.lastError }),
    });
  };
}
