import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/schema.js';
import type { Correlations } from '../correlate/correlations.js';
import type { FlushScheduler } from '../debounce/scheduler.js';
import type { Gate } from './gate.js';
import type { StreamHub } from '../http/event-stream.js';
import type { Metrics } from '../metrics/index.js';
import type { TraceEntry } from '../events/trace.js';
import type { InstanceCounters, Store, StoreHealth } from '../core/ports/index.js';
import type { AgentPush, AgentPushOptions } from '../push/agent-push.js';
import type { OutputClaims } from '../claims/claims.js';

export interface OperationsOptions {
  config: Config;
  store: Store;
  gate: Gate;
  metrics: Metrics;
  scheduler: FlushScheduler;
  streams: StreamHub;
  push: AgentPush | undefined;
  /** Agent workers' claims, in place of the push. */
  claims: OutputClaims | undefined;
  /** Deliveries the correlator observed and marked as duplicates, counted as they are admitted. */
  correlations: Pick<Correlations, 'counts'>;
  clock: Clock;
  logger: Logger;
  /** This instance's name (`/v1/stats` breakdown, `/v1/connections`). */
  instance: string;
}

/** How often the claim evictions are looked at, for the warning. */
const EVICTION_CHECK_MS = 30_000;
/** How often the store's own checks run (Redis: was it reset, may it evict keys). */
const STORE_CHECK_MS = 10_000;
/** Each instance publishes its counters this often on a shared store; they count as live three times as long. */
const COUNTERS_SHARE_MS = 2000;

/** Counts per channel and action, summed over instances. */
function summed(all: readonly InstanceCounters[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const { channels } of all) {
    for (const [channel, counts] of Object.entries(channels)) {
      const into = (out[channel] ??= {});
      for (const [action, value] of Object.entries(counts)) into[action] = (into[action] ?? 0) + value;
    }
  }
  return out;
}

/** One instance's line of the breakdown: its counts by action over every channel. */
function breakdown(counters: InstanceCounters): Record<string, unknown> {
  const counts: Record<string, number> = {};
  for (const byAction of Object.values(counters.channels))
    for (const [action, value] of Object.entries(byAction)) counts[action] = (counts[action] ?? 0) + value;
  return {
    instance: counters.instance,
    live: counters.live,
    at: counters.at,
    counts,
    streams: counters.streams,
    flushing: counters.flushing,
  };
}

/** The operator's views of one instance: readiness, `/v1/stats`, and the gauges read at scrape. */
export function operations(options: OperationsOptions) {
  const { config, store, gate, metrics, scheduler, streams, push, claims, correlations, clock, logger, instance } =
    options;
  const delivery = push ?? claims;

  /** Exact-id claims evicted past `dedup.maxKeys` before their window ended, by channel. */
  function evictions(): Record<string, number> {
    const byChannel: Record<string, number> = {};
    for (const [space, evicted] of Object.entries(store.claimStats().evictedBySpace)) {
      if (space.startsWith('id:')) byChannel[space.slice(3)] = evicted;
    }
    return byChannel;
  }
  const warned = new Set<string>();
  let watch: unknown;
  let storeWatch: unknown;
  let sharing: unknown;
  /** The store's own findings, as of its last check (the store logs what it finds). */
  let health: StoreHealth | undefined;
  const checkStore = async (): Promise<StoreHealth | undefined> => {
    if (store.health) health = await store.health().catch(() => health);
    return health;
  };
  const watchStore = (): void => {
    storeWatch = clock.setTimeout(() => void checkStore().finally(watchStore), STORE_CHECK_MS);
  };
  /** Warn once per channel when its exact-id window no longer holds (a retry past the eviction would get through). */
  function checkEvictions(): void {
    for (const [channel, evicted] of Object.entries(evictions())) {
      if (warned.has(channel)) continue;
      warned.add(channel);
      const { idTtlMs, maxKeys } = config.channels.find((c) => c.id === channel)?.dedup ?? config.dedup;
      logger.warn(
        { channel, evicted, idTtlMs, maxKeys },
        `dedup: channel "${channel}" has more message ids than dedup.maxKeys (${maxKeys}) inside its ${idTtlMs} ms window; the oldest are dropped early, so a platform retry of one of them would be taken as new: raise dedup.maxKeys`,
      );
    }
  }
  const watchEvictions = (): void => {
    watch = clock.setTimeout(() => {
      checkEvictions();
      watchEvictions();
    }, EVICTION_CHECK_MS);
  };

  /** What this instance counted since it started. */
  function ownCounters(): InstanceCounters {
    return {
      instance,
      at: clock.now(),
      live: true,
      channels: metrics.channelStats(),
      correlator: correlations.counts(),
      streams: streams.count,
      flushing: scheduler.flushing,
    };
  }
  /** Every instance's counters: this one's now, and on a shared store the others' as last published. */
  async function deployment(): Promise<InstanceCounters[]> {
    const own = ownCounters();
    if (!store.bus) return [own];
    const others = await store.bus.sharedCounters(clock.now()).catch(() => []);
    return [own, ...others.filter((counters) => counters.instance !== instance)];
  }
  const shareCounters = (): void => {
    const bus = store.bus;
    if (!bus) return;
    void bus.shareCounters(ownCounters(), COUNTERS_SHARE_MS * 3, clock.now()).catch((error: Error) => {
      logger.debug({ err: error }, 'counters not published to the store');
    });
    sharing = clock.setTimeout(shareCounters, COUNTERS_SHARE_MS);
  };

  function correlationStats(): { groups: number; observed: number; duplicates: number; evicted: number } {
    return { ...store.correlationStats(), ...correlations.counts() };
  }

  /** Reasons the service should not get traffic now (empty when ready): exactly when ingest would answer 503. */
  async function readiness(): Promise<string[]> {
    const problems: string[] = gate.closing ? ['shutting down'] : [];
    try {
      await store.ping();
    } catch (error) {
      problems.push(`store unavailable: ${(error as Error).message}`);
    }
    await gate.countBuffers();
    problems.push(...gate.problems());
    return problems;
  }

  const turnsOn = config.turns.mode !== 'off' || config.channels.some((channel) => channel.turns.mode !== 'off');

  /** Agent turns open and held messages (every instance's, from the store): the console's Turns list. */
  async function turns(): Promise<Record<string, unknown>> {
    const now = clock.now();
    const [views, open] = await Promise.all([store.openTurns(now, 100), store.openTurnCount(now)]);
    return {
      open,
      held: views.reduce((sum, view) => sum + view.held, 0),
      sessions: views.slice(0, 20),
    };
  }

  async function stats(): Promise<Record<string, unknown>> {
    if (delivery) await delivery.refresh().catch(() => undefined);
    const all = await deployment();
    const correlator = correlationStats();
    for (const key of ['observed', 'duplicates'] as const)
      correlator[key] = all.reduce((sum, counters) => sum + counters.correlator[key], 0);
    return {
      // The instance that answered, and every instance's counts (one on a memory or SQLite store).
      instance,
      instances: all.map(breakdown),
      ...(turnsOn ? { turns: await turns().catch(() => ({ open: 0, held: 0, sessions: [] })) } : {}),
      channels: summed(all),
      debounce: { open: await store.openBuffers(), flushing: scheduler.flushing },
      claims: { ...store.claimStats(), evictedByChannel: evictions() },
      correlator,
      delivery: delivery
        ? {
            url: push?.url ?? null,
            ...(claims
              ? { claims: { ...claims.config, outstanding: claims.outstandingCount(), polls: claims.waiting } }
              : {}),
            pending: delivery.pending,
            dead: delivery.dead,
            maxPending: config.agent.maxPending,
            saturated: delivery.saturated,
          }
        : { url: null },
      store: store.kind,
      ...(store.health ? { storeHealth: await checkStore() } : {}),
      streams: streams.count,
    };
  }

  metrics.gauge('inbox_correlator_groups', 'Correlation groups alive', () => store.correlationStats().groups);
  metrics.counterFrom(
    'inbox_correlator_observed_total',
    'Deliveries the correlator observed',
    () => correlations.counts().observed,
  );
  metrics.counterFrom(
    'inbox_correlator_duplicates_total',
    'Deliveries marked as duplicates of a logical event',
    () => correlations.counts().duplicates,
  );
  metrics.labelledCounterFrom(
    'inbox_dedup_evicted_total',
    'Exact-id claims dropped past dedup.maxKeys before their window ended',
    'channel',
    () => {
      checkEvictions();
      return evictions();
    },
  );
  metrics.counterFrom(
    'inbox_correlator_evicted_total',
    'Correlation groups evicted past correlation.maxGroups',
    () => store.correlationStats().evicted,
  );
  if (delivery) {
    metrics.gauge(
      'inbox_outbox_pending',
      'Processed messages not yet delivered to the agent (outbox depth)',
      () => delivery.pending,
    );
    metrics.gauge('inbox_outbox_dead', 'Messages in dead letters', () => delivery.dead);
    metrics.gauge(
      'inbox_outbox_max_pending',
      'agent.maxPending: past it ingest answers 503',
      () => config.agent.maxPending,
    );
    metrics.gauge('inbox_backpressure', '1 while ingest is refused because the outbox is full', () =>
      delivery.saturated ? 1 : 0,
    );
  }
  if (store.health) {
    metrics.counterFrom(
      'inbox_store_rollbacks_total',
      'Times the store was found reset: its outbox seq went backwards (data lost on the server)',
      () => health?.rollbacks ?? 0,
    );
    metrics.gauge(
      'inbox_store_evicting',
      "1 while the store's server may evict keys (Redis maxmemory-policy other than noeviction)",
      () => (health?.evictionPolicy ? 1 : 0),
    );
    metrics.gauge(
      'inbox_store_evicted_keys',
      "Keys the store's server evicted since it started, while its policy evicts",
      () => health?.evictedKeys ?? 0,
    );
  }
  metrics.gauge('inbox_debounce_buffers_open', 'Debounce buffers currently open', () =>
    store.openBuffers().catch(() => 0),
  );
  metrics.gauge(
    'inbox_debounce_max_open_buffers',
    'debounce.maxOpenBuffers: past it ingest answers 503',
    () => config.debounce.maxOpenBuffers,
  );
  metrics.gauge(
    'inbox_debounce_backpressure',
    '1 while ingest is refused because too many debounce buffers wait for their flush',
    async () => ((await gate.countBuffers()) >= config.debounce.maxOpenBuffers ? 1 : 0),
  );
  metrics.gauge('inbox_event_streams_open', 'Event stream clients connected', () => streams.count);

  return {
    readiness,
    stats,
    correlationStats,
    start: () => {
      watchEvictions();
      shareCounters();
      if (store.health) watchStore();
    },
    stop: () => {
      clock.clearTimeout(watch);
      clock.clearTimeout(storeWatch);
      clock.clearTimeout(sharing);
    },
  };
}

/** Every push attempt, counted, timed and written to the trail. */
export function pushAttempts(
  clock: Clock,
  metrics: Metrics,
  record: (entry: Omit<TraceEntry, 'n'>) => void,
): NonNullable<AgentPushOptions['onAttempt']> {
  return (pushed, outcome) => {
    metrics.deliveryResult(pushed.channel, outcome.state === 'retry' ? 'retried' : outcome.state);
    if (outcome.state === 'delivered') metrics.deliveryLatency.observe((clock.now() - pushed.createdAt) / 1000);
    record({
      at: clock.now(),
      channel: pushed.channel,
      kind: 'delivery',
      id: pushed.id,
      seq: pushed.seq,
      sessionKey: pushed.sessionKey,
      state: outcome.state === 'retry' ? 'pending' : outcome.state,
      attempts: outcome.attempts,
      ...(outcome.state === 'delivered' ? {} : { lastError: outcome.lastError }),
    });
  };
}
