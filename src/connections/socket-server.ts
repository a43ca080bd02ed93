import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { type ErrorCode, isIntakeError } from '../core/errors.js';
import type { ConnectionEvent, SocketPeer } from '../events/connection.js';
import type { RawDelivery } from '../events/transport.js';
import type { LinkTarget, Links } from './links.js';

/** What the composition tells the socket server about the channels bots connect to. */
export interface SocketServerOptions {
  now(): number;
  logger: Logger;
  /** Largest frame, bytes (`server.bodyLimitBytes`): a larger one closes the socket with 1009. */
  maxPayload: number;
  /** The channel a WebSocket upgrade path names, when bots connect to it. */
  channelOf(path: string): LinkTarget | undefined;
  /** Authenticate the upgrade; throws an IntakeError whose status answers the handshake. */
  accept(channel: string, handshake: RawDelivery): SocketPeer;
  /** `inbox_connection_events_total{event="refused"}`. */
  counted(channel: string, transport: string, event: ConnectionEvent): void;
}

/** How long a stop waits for a bot that sends nothing more to answer its close before it drops its socket. */
const CLOSE_WAIT_MS = 2000;
/**
 * How long a stop reads a socket whose bot is still sending what it sent before it read the
 * close: the process is ended 15 s after the stop began, and the open buffers must be flushed
 * after the sockets closed.
 */
const READ_OUT_MS = 8000;

/**
 * The WebSocket server of the bots that connect to us (OneBot reverse WebSocket). It shares the
 * HTTP server's port: an upgrade on `/webhooks/<id>` of a socket channel is authenticated by
 * the channel's adapter before the handshake completes (refused: an HTTP status, nothing kept);
 * an accepted socket joins `links`, which reads its frames.
 */
export class SocketServer {
  private readonly wss: WebSocketServer;
  private closing = false;

  constructor(
    private readonly options: SocketServerOptions,
    private readonly links: Links,
  ) {
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload, clientTracking: false });
  }

  /** The HTTP server's `upgrade` handler. Returns false for a path that is not a socket channel's. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const target = this.options.channelOf(url.pathname);
    if (!target) return false;
    const { channel, transport } = target;
    if (this.closing) {
      refuse(socket, 503, 'unavailable', 'The service is stopping; reconnect to another instance or retry shortly');
      this.options.counted(channel, transport, 'refused');
      return true;
    }
    let peer: SocketPeer;
    try {
      peer = this.options.accept(channel, {
        headers: request.headers,
        body: Buffer.alloc(0),
        query: url.searchParams,
        now: this.options.now(),
      });
    } catch (error) {
      const status = isIntakeError(error) ? error.status : 500;
      const code = isIntakeError(error) ? error.code : 'internal';
      refuse(socket, status, code, (error as Error).message);
      this.options.counted(channel, transport, 'refused');
      this.options.logger.warn({ channel, code, reason: (error as Error).message }, 'socket refused');
      return true;
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      this.links.attach(`${channel}\n${peer.botId}\n${peer.role}`, ws, target, peer, request.headers, url.searchParams);
    });
    return true;
  }

  /**
   * Stop: refuse new sockets and close every one bots opened to us (1001). Frames a bot sent
   * before it read the close are still recorded: the socket is read until the bot answers the
   * close, while frames keep coming (`closeWaitMs` without one drops it), at most `maxWaitMs`.
   */
  async close(closeWaitMs = CLOSE_WAIT_MS, maxWaitMs = READ_OUT_MS): Promise<void> {
    this.closing = true;
    await this.links.close((view) => view.transport === 'ws-reverse', closeWaitMs, 'server stopping', maxWaitMs);
    this.wss.close();
  }
}

/** Answer a refused upgrade with an HTTP status and the service's error body, and hang up. */
function refuse(socket: Duplex, status: number, code: ErrorCode, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  const reason =
    { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' }[
      status
    ] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
