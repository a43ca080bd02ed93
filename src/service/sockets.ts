import { hostname } from 'node:os';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import type { Channels } from './channels.js';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/schema.js';
import { LeaseKeeper } from '../connections/lease-keeper.js';
import { Links } from '../connections/links.js';
import { Poller } from '../connections/poller.js';
import { SocketDialer } from '../connections/socket-dialer.js';
import { SocketServer } from '../connections/socket-server.js';
import { IntakeError, isIntakeError, RequestError } from '../core/errors.js';
import type { ConnectionView } from '../events/connection.js';
import type { Metrics } from '../metrics/index.js';
import type { Pipeline } from './pipeline.js';
import type { RelayAnswer, RelayedAction, Store } from '../core/ports/index.js';
import { upgradeGuard } from '../http/upgrade-guard.js';

/** The server pings every socket this often; one that missed the last ping is dropped. */
const PING_MS = 30_000;
/**
 * Each instance publishes its connections this often on a shared store, and within
 * CHANGE_SHARE_MS of a change; a published list is kept three times as long (a killed
 * instance's connections leave every list within that).
 */
const SHARE_MS = 2000;
const CHANGE_SHARE_MS = 50;

const HOST = `${hostname()}:${process.pid}`;
let built = 0;
/** This instance as `/v1/connections` names it: host and pid (and a count past the first in one process). */
export function instanceName(): string {
  return ++built === 1 ? HOST : `${HOST}/${built}`;
}

export interface ConnectionParts {
  channels: Channels;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  maxPayload: number;
  /** The names the service is reached by, which an upgrade to a channel without a token must use (`upgradeGuard`). */
  server: Pick<Config['server'], 'host' | 'allowedHosts'>;
  /** Every event frame or polled update goes through `pipeline.inbound`, as a webhook. */
  pipeline: Pick<Pipeline, 'inbound'>;
  instance?: string;
  pingMs?: number;
  /** HTTP client of `apiUrl` actions. @default undici's global dispatcher */
  dispatcher?: Dispatcher;
  random?: () => number;
}

/** The bot connections of one instance as the rest of the service uses them. */
export interface BotConnections {
  readonly instance: string;
  /** The HTTP server's `upgrade` handler (bots that connect to us). */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Every connection of the deployment: this instance's, and on a shared store every other's. */
  list(): Promise<ConnectionView[]>;
  /** `POST /v1/channels/<id>/actions/<action>`: through a socket here, another instance's, or `apiUrl`. */
  action(channel: string, action: string, params: Record<string, unknown>, botId: string | undefined): Promise<unknown>;
  /** Dial the bots of forward channels (under their leases) and take actions relayed from other instances. */
  start(): Promise<void>;
  /** Close every socket (after the frames being recorded), give the leases back. */
  close(): Promise<void>;
}

/**
 * The bots' long-lived connections: channels whose bots connect to us (OneBot `ws-reverse`) are
 * served on their webhook URL; channels whose bot we dial (OneBot `ws`) or poll (Telegram
 * `getUpdates`) are served by the one instance holding their lease. Every event frame or polled
 * update goes through `pipeline.inbound`, as a webhook.
 */
export function botConnections(parts: ConnectionParts): BotConnections {
  const { channels, store, clock, logger, metrics } = parts;
  const instance = parts.instance ?? instanceName();
  const links = new Links({
    instance, now: () => clock.now(), clock, logger,
    classify: (channel, frame) => channels.require(channel).adapter.socketFrame?.(frame),
    deliver: parts.pipeline.inbound,
    counted: (channel, transport, event) => metrics.connectionEvent(channel, transport, event),
    changed: () => soon(),
  });
  const pollers: Poller[] = [];
  const browsers = upgradeGuard(parts.server);
  /** What this instance holds or held: its sockets and its pollers. */
  const mine = (): ConnectionView[] => [...links.list(), ...pollers.flatMap((poller) => poller.current() ?? [])];
  metrics.connections(mine);
  const server = new SocketServer({
    now: () => clock.now(), logger, maxPayload: parts.maxPayload,
    channelOf(path) {
      const match = /^\/webhooks\/([^/]+)\/?$/.exec(path);
      let id: string | undefined;
      try {
        id = match ? decodeURIComponent(match[1] as string) : undefined;
      } catch {
        return undefined; // a malformed escape names no channel
      }
      const channel = id === undefined ? undefined : channels.get(id);
      const transport = channel?.adapter.socketTransport;
      return channel?.adapter.acceptSocket && transport ? { channel: channel.config.id, adapter: channel.adapter.name, transport } : undefined;
    },
    // channelOf names only channels whose adapter takes sockets, so acceptSocket is there.
    accept(channel, handshake) {
      const { config, adapter } = channels.require(channel);
      if (!config.verify) browsers(channel, handshake);
      return adapter.acceptSocket!(handshake);
    },
    counted: (channel, transport, event) => metrics.connectionEvent(channel, transport, event),
  }, links);

  // Forward channels: one dialer each, run only while this instance holds the channel's lease.
  const keepers: LeaseKeeper[] = [];
  for (const { config, adapter } of channels.values()) {
    const dial = adapter.socketDial;
    if (!dial || !adapter.socketTransport) continue;
    const target = { channel: config.id, adapter: adapter.name, transport: adapter.socketTransport };
    const dialer = new SocketDialer({
      key: `${config.id}\n(dialled)`, target, dial, maxPayload: parts.maxPayload, actionTimeoutMs: adapter.actionTimeoutMs ?? 10_000,
      clock, logger, random: parts.random ?? Math.random,
    }, links);
    keepers.push(new LeaseKeeper({
      name: `conn:${config.id}`, holder: instance, leaseMs: dial.leaseMs, clock, logger,
      leases: store,
      gained: (fence) => dialer.start(fence),
      lost: () => dialer.stop(),
    }));
  }

  // Polled channels (Telegram getUpdates): one poller each, run only under the channel's lease.
  for (const { config, adapter } of channels.values()) {
    const poll = adapter.poll;
    if (!poll) continue;
    const poller = new Poller({
      target: { channel: config.id, adapter: adapter.name, transport: poll.transport }, poll, instance, clock, logger, shared: store,
      deliver: parts.pipeline.inbound,
      counted: (channel, transport, event) => metrics.connectionEvent(channel, transport, event),
      changed: () => soon(), random: parts.random ?? Math.random,
    });
    pollers.push(poller);
    keepers.push(new LeaseKeeper({
      name: `conn:${config.id}`, holder: instance, leaseMs: poll.leaseMs, clock, logger,
      leases: store,
      gained: (fence) => poller.start(fence),
      lost: () => poller.stop(),
    }));
  }

  // On a shared store: publish what this instance holds, and take the actions relayed to it.
  const bus = store.bus;
  let sharer: unknown;
  let sharing = false;
  let due = Infinity;
  let stopServing: (() => void) | undefined;
  const share = async (): Promise<void> => {
    await bus?.shareConnections(instance, mine(), SHARE_MS * 3, clock.now()).catch((error: unknown) => {
      logger.warn({ err: error }, 'connections could not be published to the other instances');
    });
  };
  /** Publish in `ms` unless a publication is due sooner. */
  const shareIn = (ms: number): void => {
    if (!sharing || clock.now() + ms >= due) return;
    clock.clearTimeout(sharer);
    due = clock.now() + ms;
    sharer = clock.setTimeout(() => {
      due = Infinity;
      void share().finally(() => shareIn(SHARE_MS));
    }, ms);
  };
  function soon(): void {
    shareIn(CHANGE_SHARE_MS);
  }
  const pinger = clock.setInterval(() => links.ping(), parts.pingMs ?? PING_MS);

  const local = async (channel: string, action: string, params: Record<string, unknown>, botId: string | undefined): Promise<unknown> => {
    const { adapter } = channels.require(channel);
    return links.call(channel, action, params, botId, adapter.actionTimeoutMs ?? 10_000);
  };

  return {
    instance,
    upgrade: (request, socket, head) => server.upgrade(request, socket, head),

    async list() {
      const here = mine().sort((a, b) => b.connectedAt - a.connectedAt);
      if (!bus) return here;
      const others = await bus.sharedConnections(clock.now()).catch(() => []);
      return [...here, ...others.filter((view) => view.instance !== instance)].sort((a, b) => b.connectedAt - a.connectedAt);
    },

    async action(channelId, action, params, botId) {
      const { adapter } = channels.require(channelId);
      const timeoutMs = adapter.actionTimeoutMs ?? 10_000;
      const context = { channel: channelId, stage: 'connections' };
      if (adapter.actionApi) return httpAction(adapter.actionApi, channelId, action, params, timeoutMs, parts.dispatcher);
      // Actions are OneBot's: an adapter that takes them says how long one waits (actionTimeoutMs).
      if (!adapter.socketTransport || adapter.actionTimeoutMs === undefined) {
        throw new RequestError('no_actions', 404, `Channel "${channelId}" takes no actions: only a channel whose bots are connected by WebSocket ("transport": "ws-reverse" or "ws") or a OneBot HTTP channel with "apiUrl" does`, context);
      }
      const here = await local(channelId, action, params, botId);
      if (here !== undefined) return here;
      const elsewhere = bus ? (await bus.sharedConnections(clock.now())).filter((view) => view.instance !== instance && view.state === 'open' && view.channel === channelId && view.role !== 'Event') : [];
      const holder = elsewhere.sort((a, b) => a.connectedAt - b.connectedAt).find((view) => botId === undefined || view.botId === botId);
      if (!holder || !bus) {
        const ids = [...new Set([...links.actionBots(channelId), ...elsewhere.map((view) => view.botId)])];
        const which = botId === undefined ? 'No bot is connected' : `Bot ${botId} is not connected`;
        throw new IntakeError('bot_not_connected', 404, `${which} on channel "${channelId}" for actions (connected: ${ids.length ? ids.join(', ') : 'none'})`, context);
      }
      const relayed: RelayedAction = { channel: channelId, action, params, ...(botId === undefined ? {} : { botId }) };
      const answer = await bus.relayAction(holder.instance, relayed, timeoutMs + 1000);
      if (answer === 'unheard') {
        // The holder died (or its subscriber is reconnecting) since it last published its connections.
        const ids = [...new Set([...links.actionBots(channelId), ...elsewhere.filter((view) => view.instance !== holder.instance).map((view) => view.botId)])];
        throw new IntakeError('bot_not_connected', 404, `Bot ${holder.botId} on channel "${channelId}" was held by instance ${holder.instance}, which no longer listens (stopped or died): retry once the bot has reconnected (connected: ${ids.length ? ids.join(', ') : 'none'})`, context);
      }
      if (!answer) throw new IntakeError('action_timeout', 504, `Instance ${holder.instance}, which holds bot ${holder.botId} on channel "${channelId}", did not answer "${action}" within ${timeoutMs} ms`, context);
      if (answer.ok) return answer.body;
      throw new IntakeError(answer.code, answer.status, answer.message, context);
    },

    async start() {
      for (const keeper of keepers) keeper.start();
      if (!bus) return;
      stopServing = await bus.serveActions(instance, async ({ channel, action, params, botId }): Promise<RelayAnswer> => {
        try {
          const body = await local(channel, action, params, botId);
          if (body === undefined) return { ok: false, status: 404, code: 'bot_not_connected', message: `Bot ${botId ?? ''} is no longer connected to instance ${instance} on channel "${channel}"` };
          return { ok: true, body };
        } catch (error) {
          return isIntakeError(error) ? { ok: false, status: error.status, code: error.code, message: error.message } : { ok: false, status: 500, code: 'internal', message: (error as Error).message };
        }
      });
      sharing = true;
      await share();
      shareIn(SHARE_MS);
    },

    async close() {
      clock.clearInterval(pinger);
      sharing = false;
      clock.clearTimeout(sharer);
      await Promise.all([server.close(), ...keepers.map((keeper) => keeper.stop())]);
      await links.drained();
      stopServing?.();
      if (bus) await share();
    },
  };
}

/** An action on a OneBot HTTP API: `POST <apiUrl>/<action>` with the params as JSON; the bot's JSON answer. */
async function httpAction(api: { url: string; headers: Readonly<Record<string, string>> }, channel: string, action: string, params: Record<string, unknown>, timeoutMs: number, dispatcher?: Dispatcher): Promise<unknown> {
  const context = { channel, stage: 'connections' };
  const url = `${api.url.replace(/\/$/, '')}/${encodeURIComponent(action)}`;
  let response: Dispatcher.ResponseData;
  try {
    response = await request(url, {
      method: 'POST', body: JSON.stringify(params), headers: { 'content-type': 'application/json', ...api.headers },
      headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs), ...(dispatcher ? { dispatcher } : {}),
    });
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError' || /timeout/i.test((error as Error).message);
    if (timedOut) throw new IntakeError('action_timeout', 504, `The bot's API on channel "${channel}" did not answer "${action}" within ${timeoutMs} ms`, context);
    throw new IntakeError('bot_api_unreachable', 502, `The bot's API on channel "${channel}" (apiUrl) could not be reached: ${(error as Error).message}`, context);
  }
  const text = await response.body.text();
  if (response.statusCode === 401 || response.statusCode === 403) {
    throw new IntakeError('bot_api_refused', 502, `The bot's API on channel "${channel}" refused our accessToken (HTTP ${response.statusCode})`, context);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new IntakeError('bot_api_error', 502, `The bot's API on channel "${channel}" answered "${action}" with HTTP ${response.statusCode} and no JSON`, context);
  }
}
