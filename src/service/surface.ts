import type Koa from 'koa';
import type { Config } from '../config/schema.js';
import { pickReplyBot, type Bots } from '../correlate/bots.js';
import type { Correlations } from '../correlate/correlations.js';
import type { FlushScheduler } from '../debounce/scheduler.js';
import type { Outlet } from '../emit/outlet.js';
import type { Output } from '../events/output.js';
import type { Gate } from './gate.js';
import type { Handlers } from '../handlers/routes.js';
import type { Intake } from './intake-api.js';
import type { MediaStage } from '../media/index.js';
import type { Metrics } from '../metrics/index.js';
import type { InboundChain } from '../ingest/chain.js';
import type { Pipeline } from './pipeline.js';
import type { Store } from '../core/ports/index.js';
import type { AgentPush } from '../push/agent-push.js';
import type { OutputClaims } from '../claims/claims.js';
import type { Retention } from '../retention/retention.js';
import type { BotConnections } from './sockets.js';
import type { AgentTurns } from '../turns/turns.js';

export interface SurfaceParts {
  /** The app, and its chain as middleware to mount: all of it, or the webhooks alone. */
  http: { app: Koa; mounted: Koa.Middleware; webhooks: Koa.Middleware };
  config: Config;
  store: Store;
  metrics: Metrics;
  pipeline: Pipeline;
  chain: InboundChain;
  outlet: Outlet;
  handlers: Handlers;
  bots: Bots;
  correlations: Correlations;
  turns: AgentTurns;
  correlationStats: Intake['correlationStats'];
  gate: Gate;
  media: MediaStage;
  scheduler: FlushScheduler;
  push: AgentPush | undefined;
  claims: OutputClaims | undefined;
  retention: Retention;
  sockets: BotConnections;
  /** Stop the operator's periodic checks (claim evictions). */
  stopWatching: () => void;
}

/** The library API of a built intake (docs/library.md), and the order it stops in. */
export function exposeIntake(parts: SurfaceParts): Intake {
  const {
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
    gate,
    media,
    scheduler,
    push,
    claims,
    retention,
    sockets,
  } = parts;
  const intake: Intake = {
    app: http.app,
    config,
    store,
    metrics,
    instance: sockets.instance,
    middleware: () => http.mounted,
    webhooks: () => http.webhooks,
    ingest: (channel, delivery) => pipeline.inbound(channel, delivery),
    upgrade: (request, socket, head) => sockets.upgrade(request, socket, head),
    connections: () => sockets.list(),
    action: (channel, action, params, selfId) => sockets.action(channel, action, params, selfId),
    use(middleware) {
      chain.use(middleware);
      return intake;
    },
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
    correlation: (event) => correlations.groupOf(event),
    botsForEvent: (event) => correlations.botsOf(event),
    mentionedBots: (event) => bots.mentionedBots(event),
    pickReplyBot: (event) => pickReplyBot(bots.mentionedBots(event), correlations.botsOf(event), event),
    correlationStats: parts.correlationStats,
    settle: () => scheduler.idle(),
    drain: () => {
      gate.drain();
      // Workers' waiting polls end now (204), so that nothing they hold keeps the stop waiting.
      claims?.drain();
    },
    turnDone: (outputId) => turns.done(outputId),
    turn: (sessionKey) => turns.of(sessionKey),
    async close() {
      if (gate.closing) return;
      claims?.drain();
      retention.close();
      parts.stopWatching();
      // Sockets close (1001) after the frames being recorded; forward channels' leases are given back.
      await sockets.close();
      // Deliveries already being admitted are answered 200 and must be in the last flush.
      await gate.close();
      // Downloads are aborted first: text-only batches still flush now, batches waiting for
      // media fail their one attempt and stay in the store for the next start.
      await media.close();
      await scheduler.close(!store.shared);
      await push?.close();
      claims?.close();
      await store.close();
    },
  };
  return intake;
}
