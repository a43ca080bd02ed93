import { hostname } from 'node:os';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { botActions, type ActionParts } from './bot-actions.js';
import type { Channels } from './channels.js';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/schema.js';
import { LeaseKeeper } from '../connections/lease-keeper.js';
import { Links } from '../connections/links.js';
import { Poller } from '../connections/poller.js';
import { SocketDialer } from '../connections/socket-dialer.js';
import { SocketServer } from '../connections/socket-server.js';
import type { ConnectionView } from '../events/connection.js';
import type { Metrics } from '../metrics/index.js';
import type { Pipeline } from './pipeline.js';
import type { Store } from '../core/ports/index.js';
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
  /** The messages our bots sent through actions, remembered (activation). */
  sent?: ActionParts['sent'];
  relayed?: ActionParts['relayed'];
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
    instance,
    now: () => clock.now(),
    clock,
    logger,
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
  const server = new SocketServer(
    {
      now: () => clock.now(),
      logger,
      maxPayload: parts.maxPayload,
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
        return channel?.adapter.acceptSocket && transport
          ? { channel: channel.config.id, adapter: channel.adapter.name, transport }
          : undefined;
      },
      // channelOf names only channels whose adapter takes sockets, so acceptSocket is there.
      accept(channel, handshake) {
        const { config, adapter } = channels.require(channel);
        if (!config.verify) browsers(channel, handshake);
        return adapter.acceptSocket!(handshake);
      },
      counted: (channel, transport, event) => metrics.connectionEvent(channel, transport, event),
    },
    links,
  );

  // Forward channels: one dialer each, run only while this instance holds the channel's lease.
  const keepers: LeaseKeeper[] = [];
  for (const { config, adapter } of channels.values()) {
    const dial = adapter.socketDial;
    if (!dial || !adapter.socketTransport) continue;
    const target = { channel: config.id, adapter: adapter.name, transport: adapter.socketTransport };
    const dialer = new SocketDialer(
      {
        key: `${config.id}\n(dialled)`,
        target,
        dial,
        maxPayload: parts.maxPayload,
        actionTimeoutMs: adapter.actionTimeoutMs ?? 10_000,
        clock,
        logger,
        random: parts.random ?? Math.random,
      },
      links,
    );
    keepers.push(
      new LeaseKeeper({
        name: `conn:${config.id}`,
        holder: instance,
        leaseMs: dial.leaseMs,
        clock,
        logger,
        leases: store,
        gained: (fence) => dialer.start(fence),
        lost: () => dialer.stop(),
      }),
    );
  }

  // Polled channels (Telegram getUpdates): one poller each, run only under the channel's lease.
  for (const { config, adapter } of channels.values()) {
    const poll = adapter.poll;
    if (!poll) continue;
    const poller = new Poller({
      target: { channel: config.id, adapter: adapter.name, transport: poll.transport },
      poll,
      instance,
      clock,
      logger,
      shared: store,
      deliver: parts.pipeline.inbound,
      counted: (channel, transport, event) => metrics.connectionEvent(channel, transport, event),
      changed: () => soon(),
      random: parts.random ?? Math.random,
    });
    pollers.push(poller);
    keepers.push(
      new LeaseKeeper({
        name: `conn:${config.id}`,
        holder: instance,
        leaseMs: poll.leaseMs,
        clock,
        logger,
        leases: store,
        gained: (fence) => poller.start(fence),
        lost: () => poller.stop(),
      }),
    );
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

  const actions = botActions({
    channels,
    links,
    bus,
    instance,
    clock,
    maxAnswerBytes: parts.maxPayload,
    ...(parts.dispatcher ? { dispatcher: parts.dispatcher } : {}),
    ...(parts.sent ? { sent: parts.sent } : {}),
    ...(parts.relayed ? { relayed: parts.relayed } : {}),
  });

  return {
    instance,
    upgrade: (request, socket, head) => server.upgrade(request, socket, head),

    async list() {
      const here = mine().sort((a, b) => b.connectedAt - a.connectedAt);
      if (!bus) return here;
      const others = await bus.sharedConnections(clock.now()).catch(() => []);
      return [...here, ...others.filter((view) => view.instance !== instance)].sort(
        (a, b) => b.connectedAt - a.connectedAt,
      );
    },

    action: (channel, action, params, botId) => actions.action(channel, action, params, botId),

    async start() {
      for (const keeper of keepers) keeper.start();
      stopServing = await actions.serveRelayed();
      if (!bus) return;
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
