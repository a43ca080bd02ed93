import pino from 'pino';
import { admissionPlanner, typingHold } from './admission.js';
import { Channels } from './channels.js';
import { deadLetterPort, workerClaims } from './claims.js';
import { systemClock, withIntervals } from '../core/clock.js';
import { configOf } from './configure.js';
import { Bots, botsOf, pickReplyBot, soloRecord } from '../correlate/bots.js';
import { Correlations } from '../correlate/correlations.js';
import { flushGridMs } from '../debounce/grid.js';
import { FlushScheduler } from '../debounce/scheduler.js';
import { Outlet } from '../emit/outlet.js';
import { createOutput } from '../emit/stage.js';
import { ForwardReader } from '../emit/forward-reader.js';
import type { TraceEntry } from '../events/trace.js';
import type { InboundEvent } from '../events/inbound.js';
import { Gate } from './gate.js';
import { Handlers } from '../handlers/routes.js';
import { createApp } from '../http/app.js';
import { consoleRoutes } from '../http/console.js';
import { StreamHub } from '../http/event-stream.js';
import { createAdmit } from '../ingest/admit.js';
import { AdmissionBatches } from '../ingest/batch.js';
import { accessTest } from '../access/access.js';
import { revisedWithCopies, secondThoughts } from './second-thoughts.js';
import { createActivation } from '../activation/stage.js';
import { SentMessages } from '../activation/sent.js';
import { InboundChain } from '../ingest/chain.js';
import type { CreateIntakeOptions, Intake } from './intake-api.js';
import { KEEP_SETTLED_MS, MediaStage } from '../media/index.js';
import { Metrics } from '../metrics/index.js';
import { operations, pushAttempts } from './operations.js';
import { createPipeline } from './pipeline.js';
import { AgentPush } from '../push/agent-push.js';
import { refusals } from './refusals.js';
import { Retention } from '../retention/retention.js';
import { openStore } from '../store/index.js';
import { botConnections, instanceName } from './sockets.js';
import { exposeIntake } from './surface.js';
import { traceOf } from '../trace/answer.js';
import { sharedTrail } from '../trace/shared.js';
import { inProcessTrail, Trail } from '../trace/trail.js';
import { AgentTurns } from '../turns/turns.js';

export type { CreateIntakeOptions, Intake } from './intake-api.js';
export type { InboundMiddleware } from '../ingest/chain.js';

/** Poll period of a store other instances share: their buffers and pushes are found this late at most. */
const SHARED_POLL_MS = 250;
/** How old a shared store's count of open buffers may be (`debounce.maxOpenBuffers` may be overshot by what arrives meanwhile). */
const SHARED_COUNT_MS = 100;

/**
 * Build the stages and hand them to the pipeline (src/service/pipeline.ts), which runs them in the
 * order a message meets them. Stages meet only here and through the shapes of `events/` and
 * the store's roles in `ports.ts`.
 */
export async function createIntake(options: CreateIntakeOptions = {}): Promise<Intake> {
  // What touches the world: config, clock, logger, metrics, store.
  const config = configOf(options);
  const cwd = options.cwd ?? process.cwd();
  const clock = options.clock ? withIntervals(options.clock) : systemClock;
  const logger = options.logger ?? pino({ level: config.logLevel });
  const metrics = options.metrics ?? new Metrics();
  const store =
    options.store ??
    (await openStore(config.store, cwd, {
      maxCorrelationGroups: config.correlation.maxGroups,
      ...config.redis,
      logger,
      now: clock.now(),
    }));
  if (!store.durable)
    logger.warn(
      'store "memory" is volatile: claims, open buffers and the outbox are lost on restart; use "sqlite:<path>" to keep them',
    );
  const polling = store.shared ? { pollMs: SHARED_POLL_MS } : {};

  // Channels and their adapters; the bots configuration names.
  const channels = new Channels(config, { shared: store, now: () => clock.now(), logger });
  const bots = new Bots({ ...config.correlation, correlatedNamespaces: channels.correlatedNamespaces() });
  for (const { config: channel, adapter } of channels.values()) {
    for (const botId of adapter.botIds ?? []) bots.connect(adapter.namespace, botId, channel.id);
  }
  // The verdict trail: the store's on a shared store (every instance's, unless trace.shared is
  // false), else this process's.
  const instance = options.instance ?? instanceName();
  const trail =
    store.openTrail && config.trace.shared
      ? sharedTrail(
          store.openTrail({ instance, retentionMs: config.trace.retentionMs, maxEntries: config.trace.maxEntries }),
        )
      : inProcessTrail(
          new Trail({
            capacity: config.trace.maxEntries,
            retentionMs: config.trace.retentionMs,
            now: () => clock.now(),
            instance,
          }),
        );
  const record = (entry: Omit<TraceEntry, 'n'>) => trail.publish(entry);
  const correlations = new Correlations();
  const chain = new InboundChain();

  // Access (contract §12): each channel's allow and deny lists, expanded once.
  const access = new Map(channels.ids().map((id) => [id, accessTest(channels.require(id).config.access)]));
  // Admission: the deliveries of one event-loop turn in one store step, as the policy plans each event.
  const denied = (event: InboundEvent) => access.get(event.channel)?.(event);
  const admit = createAdmit({
    store: new AdmissionBatches(store),
    bots,
    denied,
    metrics,
    plan: admissionPlanner(config, channels, bots, correlations),
    trail: record,
    logger,
  });
  const handlers = new Handlers((error, event) =>
    logger.error({ err: error, channel: event.channel, messageId: event.platformId }, 'handler failed'),
  );
  const debounceRules = channels.debounceRules();
  const media = new MediaStage({
    cwd,
    channels,
    concurrency: config.media.concurrency,
    clock,
    logger,
    metrics,
    // A finished download waits for its flush: past the longest wait a buffer can have, a lease
    // taken over from a dead instance (30 s) and a margin.
    // A batch held for an agent's turn keeps its downloads up to that turn's maxMs.
    keepSettledMs: Math.max(
      KEEP_SETTLED_MS,
      Math.max(
        ...debounceRules.map((rule) => rule.maxWaitMs),
        ...channels.ids().map((id) => channels.turnsOf(id).maxMs),
      ) + 90_000,
    ),
  });

  // Activation (contract §12): which batches reach the agent; the others are kept as context.
  // The messages our bots sent are remembered as long as context is, so a reply to one addresses them.
  const activation = createActivation({
    clock,
    store,
    rulesOf: (channel) => channels.require(channel).config,
    bots,
    sent: new SentMessages(store, clock, config.context.maxAgeMs),
    revised: revisedWithCopies(store, clock),
  });

  // Merged forwards, read while the window is open: through the platform's API where the adapter
  // has one (Feishu), else through the bot that delivered them (OneBot), as the actions route
  // sends an action (a socket here, another instance's, or apiUrl).
  const forwards = new ForwardReader({
    clock,
    limitsOf: (channel) => channels.require(channel).config.forwards,
    read: async (channel, botId, id) => {
      const { adapter, config: settings } = channels.require(channel);
      // The reader's deadline runs on the service clock; this signal only lets go of the request after it.
      if (adapter.readForward) return adapter.readForward(id, AbortSignal.timeout(settings.forwards.timeoutMs));
      if (!adapter.forwardNodes) throw new Error(`channel "${channel}" cannot read merged forwards`);
      return adapter.forwardNodes(await sockets.action(channel, 'get_forward_msg', { id }, botId));
    },
  });

  // Second thoughts (contract §13): recalls, edits, a human taking over.
  const thoughts = secondThoughts({
    config,
    channels,
    store,
    clock,
    logger,
    metrics,
    admit: (events, now) => admit(events, now),
    // The scheduler is built below; a takeover's start or end is told only once it runs.
    due: (deadline) => scheduler.due(deadline),
  });

  // Output: a due batch becomes one output in the outbox, published and pushed.
  const output = createOutput({
    clock,
    // Pushed or claimed, an output is `pending` until the agent has it.
    pushes: config.agent.url !== undefined || config.agent.claims !== undefined,
    store,
    rules: channels,
    media,
    forwards,
    bots,
    soloRecord,
    botsOf,
    pickReplyBot,
    replyTo: (channel, target) => channels.get(channel)?.adapter.replyTo?.(target),
    // Its message ids, remembered before its commit: a recall from then on finds it either way.
    emitting: (built) => thoughts.remember(built),
  });
  const outlet = new Outlet((error) => logger.error({ err: error }, 'output listener failed'));
  const streams = new StreamHub({ logger, now: () => clock.now(), clock, maxStreams: config.events.maxStreams });
  const retention = new Retention({
    clock,
    logger,
    outbox: store,
    ...config.events,
    keepAfterSeq: () => streams.keepAfterSeq(),
  });

  // The debounce scheduler closes buffers when due, on any instance, and hands them to the
  // pipeline's `flush` from its start on.
  const scheduler = new FlushScheduler({
    clock,
    buffers: store,
    ...polling,
    ...(options.flushLeaseMs ? { leaseMs: options.flushLeaseMs } : {}),
    gridMs: flushGridMs([config.correlation.noticeHoldMs, ...debounceRules.map((rule) => rule.windowMs)]),
    onError: (error, batch) => {
      metrics.storeError('flush');
      logger.error(
        { err: error, sessionKey: batch?.sessionKey, parts: batch?.parts.length },
        'flush failed; the batch stays in the store and is tried again',
      );
    },
  });
  // Agent turns: held batches, released ones, and the agent closing a turn (docs/turns.md).
  const turns = new AgentTurns({ clock, logger, metrics, store, rules: channels, scheduler, record });
  const push = config.agent.url
    ? new AgentPush({
        config: config.agent,
        queue: store,
        clock,
        logger,
        ...polling,
        ...(options.pushLeaseMs ? { leaseMs: options.pushLeaseMs } : {}),
        ...(options.agentDispatcher ? { dispatcher: options.agentDispatcher } : {}),
        onAttempt: pushAttempts(clock, metrics, record),
        // The agent's answer closes a turn (`{"turn":"done"}`) only where a channel keeps turns.
        ...(channels.turnsOn() ? { turns } : {}),
      })
    : undefined;
  // Or agent workers pull the outputs (claims), from the same queue.
  const claims = workerClaims({ config, store, clock, logger, metrics, record, turns, turnsOn: channels.turnsOn() });
  const delivery = push ?? claims;
  // A shared store's open buffers are a round trip to count: at most every SHARED_COUNT_MS.
  const buffers = {
    count: () => store.openBuffers(),
    max: config.debounce.maxOpenBuffers,
    maxAgeMs: store.shared ? SHARED_COUNT_MS : 0,
  };
  const gate = new Gate({ clock, logger, metrics, push: delivery, maxPending: config.agent.maxPending, buffers });
  const rejected = refusals({ channels, clock, logger, metrics, record });

  // The path of a message, in run order (src/service/pipeline.ts).
  const pipeline = createPipeline({
    clock,
    logger,
    metrics,
    record,
    rejected,
    channels,
    gate,
    limits: config.server,
    // A message of one of our bots is no one's to deny: admission drops it as looped, and
    // activation remembers it first (a reply to it addresses the bots).
    denied: (event) =>
      event.kind === 'message' && bots.isOwnBot(event.namespace, event.sender.id) ? undefined : denied(event),
    chain,
    admit,
    correlations,
    handlers,
    media,
    forwards,
    scheduler,
    typing: typingHold(channels, store),
    activation,
    revisions: thoughts.revisions,
    revisionKeys: thoughts.revisionKeys,
    discard: (parts) => media.discard(parts),
    takeovers: thoughts.takeovers,
    humanSent: thoughts.humanSent,
    output,
    turns,
    outlet,
    delivery,
    retention,
  });

  // Bot connections (they dial us, or we dial them): each event frame runs through `pipeline.inbound`.
  const sockets = botConnections({
    channels,
    store,
    clock,
    logger,
    metrics,
    maxPayload: config.server.bodyLimitBytes,
    server: config.server,
    pipeline,
    instance,
    ...(options.socketPingMs ? { pingMs: options.socketPingMs } : {}),
    // What our bots send through actions: a reply to it addresses them (contract §12). The send
    // happened: a store that cannot note it costs that, not the caller's answer (a retried send posts twice).
    relayed: thoughts.relayed,
    sent: (messages) =>
      activation
        .remember(messages)
        .catch((error: unknown) => logger.warn({ err: error }, 'a message our bot sent could not be remembered')),
  });
  const ops = operations({
    config,
    store,
    gate,
    metrics,
    scheduler,
    streams,
    push,
    claims,
    correlations,
    clock,
    logger,
    instance,
  });

  const http = createApp({
    config,
    logger,
    now: () => clock.now(),
    channels,
    // Webhooks keep no order among themselves: no turn (a third argument) reaches the pipeline.
    ingest: (channel, delivery) => pipeline.inbound(channel, delivery),
    rejected,
    readiness: ops.readiness,
    stats: ops.stats,
    metrics: { contentType: metrics.contentType, metrics: () => metrics.scrape() },
    outbox: store,
    streams,
    sockets,
    trail,
    turns,
    conversations: {
      async view(sessionKey) {
        const state = await store.conversation(sessionKey, clock.now());
        const context = state.context.map((entry) => entry.message);
        return { sessionKey, activation: state.activation ?? null, context, dropped: state.dropped };
      },
      setActivation: (sessionKey, modes) => store.setActivation(sessionKey, modes, clock.now()),
    },
    takeovers: thoughts.byHand,
    trace: (id) => traceOf(id, trail, (outputId) => store.outboxGet(outputId)),
    claims,
    deadLetters: deadLetterPort(store, delivery),
    extra: consoleRoutes({
      cwd,
      mediaDirs: () => [config.media.dir, ...config.channels.map((channel) => channel.media.dir)],
    }),
  });

  // Start: media temporaries, the push queue, buffers left by a previous run (drained in
  // chunks after this resolves, so the service listens at once), and the outbox trim.
  await media.start();
  await push?.start();
  await claims?.start();
  await scheduler.start(pipeline.flush);
  retention.start();
  ops.start();
  await sockets.start();

  if (channels.turnsOn()) {
    metrics.gauge('inbox_turns_open', "Agent turns open (every instance's, as the store sees them)", () =>
      store.openTurnCount(clock.now()).catch(() => 0),
    );
  }

  return exposeIntake({
    http,
    config,
    store,
    metrics,
    pipeline,
    chain,
    outlet,
    handlers,
    bots,
    correlations,
    turns,
    correlationStats: ops.correlationStats,
    gate,
    media,
    scheduler,
    push,
    claims,
    retention,
    sockets,
    stopWatching: () => {
      ops.stop();
      thoughts.takeovers.close();
    },
  });
}
