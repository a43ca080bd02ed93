import type Koa from 'koa';
import compose from 'koa-compose';
import pino, { type Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { createAdapter, type Adapter, type PlatformReply, type RawDelivery } from './adapters/index.js';
import { systemClock, type Clock } from './clock.js';
import { loadConfig, type LoadOptions } from './config/load.js';
import type { ChannelConfig, Config } from './config/schema.js';
import { Bots, botsOf, pickReplyBot, soloRecord } from './correlate/bots.js';
import { isCommand } from './debounce/command.js';
import { FlushScheduler } from './debounce/scheduler.js';
import { claimKey, dedupPlan } from './dedup/claims.js';
import { Outlet } from './emit/outlet.js';
import { createOutput, type Emitted } from './emit/stage.js';
import { RequestError, UnavailableError, isIntakeError } from './errors.js';
import type { BotRef, CorrelationRecord, InboundEvent, OutputOf, OutputType, Output, TraceEntry } from './events.js';
import { Handlers, type Handler } from './handlers/routes.js';
import { createApp } from './http/app.js';
import { consoleRoutes } from './http/console.js';
import { parseJson } from './http/body.js';
import { StreamHub } from './http/event-stream.js';
import { createAdmit, type Admitted, type Plan } from './ingest/admit.js';
import { KEEP_SETTLED_MS, MediaStage } from './media/index.js';
import { Metrics } from './metrics/index.js';
import type { AdmitItem, BufferRule, LeasedBatch, Store } from './ports.js';
import { AgentPush } from './push/agent-push.js';
import { openStore } from './store/index.js';
import { traceOf } from './trace/answer.js';
import { Trail } from './trace/trail.js';

export interface CreateIntakeOptions {
  /** A loaded Config; or give `configFile`/`env` to load one. */
  config?: Config;
  /** Raw config object (CONTRACT §2 shape), validated like the file. */
  configFile?: Record<string, unknown>;
  env?: LoadOptions['env'];
  /** Defaults to the store named by `config.store`. */
  store?: Store;
  clock?: Clock;
  logger?: Logger;
  metrics?: Metrics;
  /** HTTP client for pushes to the agent. @default an undici Agent */
  agentDispatcher?: Dispatcher;
  /** Working directory for relative paths (store, media). */
  cwd?: string;
}

/** The library surface of CONTRACT §7. */
export interface Intake {
  /** The Koa app serving CONTRACT §3; `app.listen()` or mount `middleware()` in your own. */
  readonly app: Koa;
  readonly config: Config;
  /** The store this instance runs on (for operators and tests; stages reach it only through the composition). */
  readonly store: Store;
  /** The metrics registry behind `/metrics`. */
  readonly metrics: Metrics;
  /** The app as one Koa middleware, to mount inside another Koa app. */
  middleware(): Koa.Middleware;
  /**
   * Ingest one delivery without HTTP (a OneBot WebSocket, a queue consumer): verified,
   * normalized and admitted exactly as a webhook; resolves with the answer a webhook would get.
   */
  ingest(channel: string, delivery: RawDelivery): Promise<PlatformReply>;
  /** Receive every output of a type (`chat.processedMessage`, `chat.notice`, `chat.request`) flushed by this instance. */
  on<T extends OutputType>(event: T, listener: (output: OutputOf<T>) => unknown): Intake;
  off<T extends OutputType>(event: T, listener: (output: OutputOf<T>) => unknown): Intake;
  /**
   * Run `fn` for events of a route (`message`, `message.group`, `notice.group_increase`,
   * `request.friend`, ...) once per logical event; a leading `!` runs it for every delivery.
   */
  handle(route: string | readonly string[], fn: Handler): Intake;
  /** What is known of an event's logical group (every delivery, each bot's ids). */
  correlation(event: InboundEvent): CorrelationRecord;
  /** Every bot that delivered this logical event, first arrival first. */
  botsForEvent(event: InboundEvent): BotRef[];
  /** Connected bots the message mentions, in mention order. */
  mentionedBots(event: InboundEvent): BotRef[];
  /** The bot that should answer: mentioned and connected, else first arrival, else the deliverer. */
  pickReplyBot(event: InboundEvent): BotRef;
  correlationStats(): { groups: number; observed: number; duplicates: number; evicted: number };
  /** Wait until every buffer due by now is flushed and every flush started has ended (tests, tools). */
  settle(): Promise<void>;
  /** Stop: flush every open buffer (store not shared), stop pushing, close the store. */
  close(): Promise<void>;
}

/** Poll period of a store other instances share: their buffers and pushes are found this late at most. */
const SHARED_POLL_MS = 250;
/** Retry-After of a 503 for a store that could not record, and how long readiness then fails. */
const STORE_RETRY_AFTER_S = 5;
/** A signed delivery's id is remembered at least as long as its signature could be replayed. */
const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

/**
 * The composition, in the order a message meets the stages:
 *
 *   config -> store -> adapters -> admit -> handlers -> media -> debounce -> emit -> push -> http
 *
 * A webhook is verified and normalized by its channel's adapter, admitted in one store step
 * (correlation, claims, buffer append) and answered; then `handOn` gives the admitted events
 * to handlers, starts their downloads and tells the flush scheduler their deadline. When a
 * buffer is due, `flushBatch` merges it, waits for its media and commits it to the outbox;
 * `published` hands the output to the emitter, the trail and the agent push. Stages meet only
 * here and through the shapes of `events.ts` and `ports.ts`.
 */
export async function createIntake(options: CreateIntakeOptions = {}): Promise<Intake> {
  // 1. Config, and what touches the world.
  const config = options.config ?? loadConfig({
    ...(options.configFile ? { file: options.configFile } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  const cwd = options.cwd ?? process.cwd();
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? pino({ level: config.logLevel });
  const metrics = options.metrics ?? new Metrics();

  // 2. Store: claims, correlation groups, buffers, outbox and push queue.
  const store = options.store ?? await openStore(config.store, cwd, { maxCorrelationGroups: config.correlation.maxGroups, ...config.redis, logger, now: clock.now() });
  if (!store.durable) logger.warn('store "memory" is volatile: claims, open buffers and the outbox are lost on restart; use "sqlite:<path>" to keep them');

  // 3. Adapters, one per configured channel; bots known from configuration.
  const channels = new Map<string, { config: ChannelConfig; adapter: Adapter }>();
  for (const channel of config.channels) channels.set(channel.id, { config: channel, adapter: createAdapter(channel) });
  const bots = new Bots({ ...config.correlation, sharedNamespaces: sharedNamespaces(channels) });
  for (const { config: channel, adapter } of channels.values()) {
    for (const botId of adapter.botIds ?? []) bots.connect(adapter.namespace, botId, channel.id);
  }
  const trail = new Trail();
  const record = (entry: Omit<TraceEntry, 'n'>) => trail.publish(entry);
  const counts = { observed: 0, duplicates: 0 };

  // 4. Admit: the per-delivery decision, one store step.
  const noticeHold: BufferRule = { windowMs: config.correlation.noticeHoldMs, maxWaitMs: config.correlation.noticeHoldMs, maxMessages: Number.MAX_SAFE_INTEGER };
  // One shared, frozen empty array for the buffered copy's empty lists: an empty array per
  // message is 32 bytes more for the young-generation collector to copy while it waits.
  const none = Object.freeze([]) as unknown as never[];
  const noHold: BufferRule = { windowMs: 0, maxWaitMs: 0, maxMessages: 1 };
  const plan = (event: InboundEvent, now: number, index: number, deliveryId: string | undefined): Plan => {
    const channel = channels.get(event.channel)?.config;
    const dedup = channel?.dedup ?? config.dedup;
    const { claims, kinds } = dedupPlan(event, dedup);
    if (deliveryId !== undefined && event.platformId === undefined) {
      // A replayed signed delivery: its events have no ids, but the delivery has one.
      claims.unshift({ key: claimKey('wh', event.channel, deliveryId, String(index)), space: `wh:${event.channel}`, ttlMs: Math.max(dedup.idTtlMs, SIGNATURE_TOLERANCE_MS), maxKeys: dedup.maxKeys });
      kinds.unshift('deduped');
    }
    const correlation = bots.step(event, now);
    if (correlation) counts.observed++;
    const debounce = channel?.debounce ?? config.debounce;
    const message = event.kind === 'message';
    const item: AdmitItem = {
      claims,
      part: {
        // Notices and requests are held (never merged) in a buffer of their own.
        // Joined, not concatenated: `+` makes a rope of two cons strings that the buffer's map
        // then flattens into a third string, all three kept while the message waits.
        debounceKey: message ? [event.sessionKey, event.sender.id].join('\u0000') : ['\u0001', event.channel, '\u0000', event.id].join(''),
        receivedAt: now,
        // The buffered copy drops `raw` and `segments` (read only by the correlation step,
        // above): what waits out the window, in memory or in a row, is what the output needs.
        event: {
          ...event, raw: undefined, segments: none,
          media: event.media.length === 0 ? none : event.media, mentions: event.mentions.length === 0 ? none : event.mentions,
        },
        ...(correlation ? { correlationKey: correlation.key } : {}),
      },
      rule: message ? debounce : bots.correlates(event.namespace) ? noticeHold : noHold,
      closeNow: message && debounce.flushCommands && isCommand(event.text),
      ...(correlation ? { correlation } : {}),
      ...(event.fields?.media_group_id === undefined ? {} : { unit: `album:${event.fields.media_group_id}` }),
    };
    return { item, kinds };
  };
  const admit = createAdmit({
    admit: (items, now) => store.admit(items, now),
    isOwnBot: (namespace, id) => bots.isOwnBot(namespace, id),
    plan,
    count: (channel, adapter, action) => metrics.message(channel, adapter, action),
    trail: record,
  });

  // 5. Handlers: library code that sees each logical event once (or every delivery with `!`).
  const handlers = new Handlers((error, event) => logger.error({ err: error, channel: event.channel, messageId: event.platformId }, 'handler failed'));
  const groups = new WeakMap<InboundEvent, CorrelationRecord>();

  /** The debounce rules in use: the global one and each channel's. */
  const debounceRules = [config.debounce, ...[...channels.values()].map(({ config: channel }) => channel.debounce)];

  // 6. Media: downloads start at admission and overlap the debounce window.
  const media = new MediaStage({
    cwd, channels: [...channels.keys()], concurrency: config.media.concurrency, clock, logger, metrics,
    optionsFor: (channel) => channels.get(channel)?.config.media ?? config.media,
    adapterFor: (channel) => channels.get(channel)?.adapter,
    // A finished download waits for its flush: past the longest wait a buffer can have, a lease
    // taken over from a dead instance (30 s) and a margin; at least the stage's 5 minutes.
    keepSettledMs: Math.max(KEEP_SETTLED_MS, Math.max(...debounceRules.map((rule) => rule.maxWaitMs)) + 90_000),
  });

  // 7. Debounce: buffers live in the store; this closes them when due, on any instance.
  const scheduler = new FlushScheduler({
    clock,
    gridMs: flushGridMs([config.correlation.noticeHoldMs, ...debounceRules.map((rule) => rule.windowMs)]),
    claimDue: (now, leaseMs, limit) => store.claimDue(now, leaseMs, limit),
    renewLease: (batch, now, leaseMs) => store.renewLease(batch, now, leaseMs),
    release: (batch, retryAt) => store.release(batch, retryAt),
    nextDeadline: () => store.nextDeadline(),
    flush: flushBatch,
    onError: (error, batch) => {
      metrics.storeError('flush');
      logger.error({ err: error, sessionKey: batch?.sessionKey, parts: batch?.parts.length }, 'flush failed; the batch stays in the store and is tried again');
    },
    ...(store.shared ? { pollMs: SHARED_POLL_MS } : {}),
  });

  // 8. Emit: a due batch becomes one output in the outbox.
  const outlet = new Outlet((error) => logger.error({ err: error }, 'output listener failed'));
  const output = createOutput({
    clock, logger, pushes: config.agent.url !== undefined,
    commit: async (batch, draft, now) => {
      // A commit can run and only its answer be lost: a Redis timeout (an error), or a reconnection
      // after which ioredis sends it again and the fence it used up refuses it (no record). The
      // outbox says whether it ran; its draft id is new on every attempt.
      let failure: unknown;
      try {
        const record = await store.commit(batch, draft, now);
        if (record) return record;
      } catch (error) {
        failure = error;
      }
      const recorded = await store.outboxGet(draft.id).catch(() => undefined);
      if (recorded) {
        logger.warn({ err: failure, sessionKey: batch.sessionKey, seq: recorded.seq }, 'flush commit answered late or failed, but its output is in the outbox; published');
        return recorded;
      }
      if (failure !== undefined) throw failure;
      return undefined;
    },
    correlation: (key, now) => store.correlation(key, now),
    collectMedia: (batch) => media.collect(batch.parts),
    mediaMode: (channel) => channels.get(channel)?.config.debounce.media ?? config.debounce.media,
    mentionedBots: (event) => bots.mentionedBots(event),
    soloRecord, botsOf, pickReplyBot,
  });

  // 9. Push to the agent: the store's push queue, one record in flight per session.
  const push = config.agent.url
    ? new AgentPush({
      config: config.agent, queue: store, clock, logger,
      ...(options.agentDispatcher ? { dispatcher: options.agentDispatcher } : {}),
      ...(store.shared ? { pollMs: SHARED_POLL_MS } : {}),
      onAttempt: (pushed, outcome) => {
        metrics.deliveryResult(pushed.channel, outcome.state === 'retry' ? 'retried' : outcome.state);
        if (outcome.state === 'delivered') metrics.deliveryLatency.observe((clock.now() - pushed.createdAt) / 1000);
        record({
          at: clock.now(), channel: pushed.channel, kind: 'delivery', id: pushed.id, seq: pushed.seq, sessionKey: pushed.sessionKey,
          state: outcome.state === 'retry' ? 'pending' : outcome.state, attempts: outcome.attempts,
          ...(outcome.state === 'delivered' ? {} : { lastError: outcome.lastError }),
        });
      },
    })
    : undefined;

  // 10. HTTP.
  const streams = new StreamHub({ logger, now: () => clock.now(), maxStreams: config.events.maxStreams });
  let closing = false;
  let sinceTrim = 0;
  let trimming = false;
  let trimAgain = false;
  /**
   * The last admission failed (disk full, read-only file, Redis away): readiness fails for as
   * long as the 503's Retry-After asks platforms to wait, then lets traffic try again.
   */
  let admitFailing: { at: number; reason: string } | undefined;

  /** Deliveries being admitted now: close() waits for them before its last flush. */
  let ingesting = 0;
  let ingested: (() => void) | undefined;

  /** Verify, normalize and record one delivery; resolves once everything in it is recorded. */
  async function ingest(channelId: string, delivery: RawDelivery): Promise<PlatformReply> {
    const { adapter } = channelOf(channelId);
    if (closing) throw new UnavailableError('shutting_down', 'The service is shutting down; retry shortly', 5, { channel: channelId });
    if (push?.saturated) {
      throw new UnavailableError('outbox_full', `${push.pending} messages are waiting for the agent (agent.maxPending ${config.agent.maxPending}); retry later`, 30, { channel: channelId });
    }
    adapter.verify(delivery);
    const normalized = adapter.normalize(parseJson(delivery.body, config.server.maxDepth, config.server.maxKeys), delivery);
    if (normalized.ignored) {
      metrics.message(channelId, adapter.name, 'ignored', normalized.ignored);
      record({ at: delivery.now, channel: channelId, kind: 'verdict', id: '', verdict: 'ignored', reason: `${normalized.ignored} receipt(s) or meta event(s)` });
    }
    let admitted: Admitted | undefined;
    if (normalized.events.length > 0) {
      const deliveryId = adapter.deliveryId?.(delivery);
      // Deliveries being admitted are answered 200 and must be in close()'s last flush.
      ingesting++;
      try {
        admitted = await admit(normalized.events, delivery.now, deliveryId);
        admitFailing = undefined;
      } catch (error) {
        admitFailing = { at: clock.now(), reason: (error as Error).message };
        metrics.storeError('admit');
        logger.error({ err: error, channel: channelId }, 'store unavailable; delivery refused');
        throw new UnavailableError('store_unavailable', 'The store is unreachable; nothing was recorded, retry later', STORE_RETRY_AFTER_S, { channel: channelId, cause: error });
      } finally {
        if (--ingesting === 0) ingested?.();
      }
      handOn(admitted);
    }
    if (normalized.reply) return normalized.reply;
    return { status: 200, body: admitted?.summary ?? { accepted: 0, duplicates: 0, events: [] } };
  }

  /** After the answer: handlers, downloads, and the buffer's deadline. */
  function handOn(admitted: Admitted): void {
    for (const [event, group] of admitted.groups) groups.set(event, group);
    counts.duplicates += admitted.repeats.length;
    for (const event of admitted.repeats) handlers.dispatch(event, true);
    for (const { part, deadline } of admitted.accepted) {
      handlers.dispatch(part.event, false);
      if (part.event.media.length > 0) media.begin(part);
      scheduler.due(deadline);
    }
  }

  /** A due buffer: merge, media, commit. */
  async function flushBatch(batch: LeasedBatch): Promise<void> {
    const emitted = await output(batch);
    if (emitted) published(emitted);
  }

  /** A committed output: count it, trail it, hand it to the emitter and the push. */
  function published({ record: committed, output: built, batch }: Emitted): void {
    const first = batch.parts[0]!.event;
    metrics.message(committed.channel, first.adapter, 'emitted');
    if (batch.parts.length > 1) {
      metrics.message(first.channel, first.adapter, 'debounced', batch.parts.length - 1);
      logger.info({ channel: first.channel, sessionKey: batch.sessionKey, merged: batch.parts.length, reason: batch.reason, seq: committed.seq }, `merged ${batch.parts.length} messages`);
    }
    record({
      at: clock.now(), channel: committed.channel, kind: 'batch', id: committed.id, seq: committed.seq, sessionKey: committed.sessionKey,
      // The ids the output lists (platform ids where there are): a trace by any of them finds it.
      messageIds: committed.messageIds ?? batch.parts.map((part) => part.event.platformId ?? part.event.id), reason: batch.reason, state: committed.state,
    });
    outlet.publish(committed, built);
    if (committed.state === 'pending') push?.added();
    // Trim by count as the outbox grows, not only on the minute.
    if (++sinceTrim >= Math.max(100, config.events.retentionCount / 10)) void trim();
  }

  /**
   * Drop retained output past `events.retentionMs` / `retentionCount` (never undelivered, never
   * unread by a stream). One trim at a time: a store may spread a long one over several turns
   * (SQLite), and trims started meanwhile would each add their own share to every turn. A call
   * during a trim runs one more after it, with the positions streams hold then.
   */
  async function trim(): Promise<void> {
    sinceTrim = 0;
    if (trimming) {
      trimAgain = true;
      return;
    }
    trimming = true;
    try {
      do {
        trimAgain = false;
        await store.trimOutbox(clock.now() - config.events.retentionMs, config.events.retentionCount, streams.keepAfterSeq());
      } while (trimAgain && !closing);
    } catch (error) {
      logger.warn({ err: error }, 'outbox trim failed');
    } finally {
      trimming = false;
    }
  }

  function channelOf(id: string): { config: ChannelConfig; adapter: Adapter } {
    const channel = channels.get(id);
    if (!channel) throw new RequestError('unknown_channel', 404, `No channel "${id}" is configured (see "channels" in the configuration)`, { channel: id });
    return channel;
  }

  const app = createApp({
    config, logger, now: () => clock.now(),
    hasChannel: (id) => channels.has(id),
    ingest,
    handshake(channelId, delivery) {
      const { adapter } = channelOf(channelId);
      if (!adapter.handshake) throw new RequestError('no_handshake', 405, `Channel "${channelId}" (${adapter.name}) takes POST only`, { channel: channelId });
      return adapter.handshake(delivery);
    },
    rejected(channelId, error) {
      const channel = channels.get(channelId);
      if (!channel) return;
      const code = isIntakeError(error) ? error.code : 'internal';
      if (code === 'client_closed') return; // the client left; nothing was refused
      metrics.message(channel.config.id, channel.adapter.name, 'rejected');
      record({ at: clock.now(), channel: channelId, kind: 'verdict', id: '', verdict: 'rejected', reason: `${code}: ${(error as Error).message}` });
      logger.warn({ channel: channelId, code, reason: (error as Error).message }, 'delivery rejected');
    },
    readiness,
    stats,
    metrics: { contentType: metrics.contentType, metrics: () => metrics.scrape() },
    outbox: store,
    streams,
    trail,
    trace: (id) => traceOf(id, trail, (outputId) => store.outboxGet(outputId)),
    deadLetters: push && {
      count: async () => (await store.deliveryCounts()).dead,
      list: (limit) => store.deadLetters(limit),
      retry: (id, limit) => push.retryDead(id, limit),
    },
    extra: consoleRoutes({ cwd, mediaDirs: () => [config.media.dir, ...config.channels.map((channel) => channel.media.dir)] }),
  });

  /** Reasons the service should not get traffic now (empty when ready): exactly when ingest would answer 503. */
  async function readiness(): Promise<string[]> {
    const problems: string[] = [];
    if (closing) problems.push('shutting down');
    try {
      await store.ping();
    } catch (error) {
      problems.push(`store unavailable: ${(error as Error).message}`);
    }
    if (admitFailing && clock.now() - admitFailing.at < STORE_RETRY_AFTER_S * 1000) problems.push(`the last delivery could not be recorded: ${admitFailing.reason}`);
    if (push?.saturated) problems.push(`outbox full: ${push.pending} undelivered (agent.maxPending ${config.agent.maxPending})`);
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

  function correlationStats(): { groups: number; observed: number; duplicates: number; evicted: number } {
    return { ...store.correlationStats(), ...counts };
  }

  // Metrics read at scrape time.
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

  // Start: media temporaries, the push queue, buffers left by a previous run (drained in
  // chunks after this resolves, so the service listens at once), and the minute's trim.
  await media.start();
  await push?.start();
  await scheduler.start();
  const trimTimer = setInterval(() => void trim(), 60_000);
  trimTimer.unref();

  const intake: Intake = {
    app,
    config,
    store,
    metrics,
    middleware: () => compose(app.middleware) as Koa.Middleware,
    ingest,
    on(event, listener) {
      outlet.emitter.on(event, listener as (output: Output) => unknown);
      return intake;
    },
    off(event, listener) {
      outlet.emitter.off(event, listener as (output: Output) => unknown);
      return intake;
    },
    handle(route, fn) {
      handlers.handle(route, fn);
      return intake;
    },
    correlation: (event) => groups.get(event) ?? soloRecord(event),
    botsForEvent: (event) => botsOf(groups.get(event), event),
    mentionedBots: (event) => bots.mentionedBots(event),
    pickReplyBot: (event) => pickReplyBot(bots.mentionedBots(event), botsOf(groups.get(event), event), event),
    correlationStats,
    settle: () => scheduler.idle(),
    async close() {
      if (closing) return;
      closing = true;
      clearInterval(trimTimer);
      // Deliveries already being admitted are answered 200 and must be in the last flush.
      if (ingesting > 0) await new Promise<void>((resolve) => { ingested = resolve; });
      // Downloads are aborted first: text-only batches still flush now, batches waiting for
      // media fail their one attempt and stay in the store for the next start.
      await media.close();
      await scheduler.close(!store.shared);
      await push?.close();
      await store.close();
    },
  };
  return intake;
}

/** Namespaces several channels serve: only there can two adapters deliver one message. */
function sharedNamespaces(channels: ReadonlyMap<string, { adapter: Adapter }>): Set<string> {
  const perNamespace = new Map<string, number>();
  for (const { adapter } of channels.values()) perNamespace.set(adapter.namespace, (perNamespace.get(adapter.namespace) ?? 0) + 1);
  return new Set([...perNamespace].filter(([, count]) => count > 1).map(([namespace]) => namespace));
}

/**
 * The grid deadlines are rounded up to, so one pass closes every buffer due in it: a twentieth
 * of the shortest hold (debounce window or notice hold), between 10 and 50 ms. With the
 * defaults (1.5 s and 1 s) that is 50 ms, and a buffer closes at most 5% of its hold late;
 * against a 10 ms grid it is a fifth of the passes, which under a steady few hundred messages a
 * second cost 5-14% of the CPU per request (`bench/ingest-cost.mjs`).
 */
export function flushGridMs(holdsMs: readonly number[]): number {
  return Math.max(10, Math.min(50, Math.floor(Math.min(...holdsMs) / 20)));
}
