import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Channels } from './channels.js';
import type { Clock } from './clock.js';
import { SocketServer } from './connections/socket-server.js';
import { RequestError } from './errors.js';
import type { Metrics } from './metrics/index.js';
import type { Pipeline } from './pipeline.js';

/** The server pings every socket this often; one that missed the last ping is dropped. */
const PING_MS = 30_000;

/** This instance as `/v1/connections` names it. */
export const instanceName = `${hostname()}:${process.pid}`;

export interface SocketParts {
  channels: Channels;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  maxPayload: number;
  /** Resolved lazily: the pipeline is built after the stages it runs. */
  pipeline: () => Pipeline;
  pingMs?: number;
}

/**
 * The bots that connect to us: channels whose adapter takes sockets (OneBot `ws-reverse`) are
 * served on their webhook URL; every event frame goes through `pipeline.inbound`, as a webhook.
 */
export function socketServer(parts: SocketParts): SocketServer {
  const { channels, clock, logger, metrics } = parts;
  const sockets: SocketServer = new SocketServer({
    instance: instanceName, now: () => clock.now(), logger, maxPayload: parts.maxPayload, pingMs: parts.pingMs ?? PING_MS,
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
      return channel && transport ? { channel: channel.config.id, adapter: channel.adapter.name, transport } : undefined;
    },
    // channelOf names only channels whose adapter takes sockets, so acceptSocket is there.
    accept: (channel, handshake) => channels.require(channel).adapter.acceptSocket!(handshake),
    classify: (channel, frame) => channels.require(channel).adapter.socketFrame?.(frame),
    deliver: (channel, delivery) => parts.pipeline().inbound(channel, delivery),
    counted: (channel, transport, event) => metrics.connectionEvent(channel, transport, event),
  });
  metrics.connections(() => sockets.list());
  return sockets;
}

/** An action through a channel's connected bot (`POST /v1/channels/<id>/actions/<action>`). */
export function actionOf(channels: Channels, sockets: SocketServer) {
  return (channelId: string, action: string, params: Record<string, unknown>, selfId: string | undefined): Promise<unknown> => {
    const { adapter } = channels.require(channelId);
    if (!adapter.socketTransport) {
      throw new RequestError('no_actions', 404, `Channel "${channelId}" takes no actions: only a channel whose bots connect by WebSocket ("transport": "ws-reverse") does`, { channel: channelId });
    }
    return sockets.call(channelId, action, params, selfId, adapter.actionTimeoutMs ?? 10_000);
  };
}
