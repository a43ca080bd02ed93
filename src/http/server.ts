import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { systemClock, type Clock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import { SlowClientGuard } from './slow-clients.js';

/** How often, at most, the log says that connections past server.maxConnections were dropped. */
const DROP_LOG_INTERVAL_MS = 10_000;

/** Answers for HTTP-level client errors: the codes Node itself would send. */
const clientErrorAnswers: ReadonlyMap<string, string> = new Map([
  ['ERR_HTTP_REQUEST_TIMEOUT', '408 Request Timeout'],
  ['HPE_HEADER_OVERFLOW', '431 Request Header Fields Too Large'],
]);

/**
 * Create the HTTP server with the `server.*` socket limits and start listening on
 * `server.host`:`server.port`. Slow clients are cut off with `408` (headersTimeoutMs,
 * requestTimeoutMs: see SlowClientGuard), idle kept-alive sockets close after
 * keepAliveTimeoutMs, sockets past maxConnections are closed on arrival, and malformed requests
 * are answered 400 and logged without their bytes (a raw packet can carry another request's
 * `Authorization` header). Requests go to `handler` until `serve` hands them to another.
 * Rejects with a ConfigError naming `server.port` when the port is taken. `clock` runs the
 * slow-client sweep and paces the dropped-connections warning.
 */
export async function listen(
  handler: RequestListener,
  config: Config,
  logger: Logger,
  clock: Clock = systemClock,
): Promise<Server> {
  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, maxConnections, host, port } = config.server;
  // Node checks these two timeouts every 30 s (its default), even with no connection open; the
  // guard checks them every second at most, and only while connections are open.
  const server = createServer({ headersTimeout: headersTimeoutMs, requestTimeout: requestTimeoutMs });
  guards.set(server, new SlowClientGuard(server, config.server, handler, clock));
  server.keepAliveTimeout = keepAliveTimeoutMs;
  server.maxConnections = maxConnections;

  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    const code = error.code ?? 'unknown';
    if (code === 'ECONNRESET' || !socket.writable) {
      logger.debug({ code }, 'client went away');
      socket.destroy();
      return;
    }
    // The code only: `error.rawPacket` holds the request's bytes, headers and tokens included.
    logger.warn({ code }, 'malformed or slow HTTP request refused');
    const status = clientErrorAnswers.get(code) ?? '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    socket.destroySoon();
  });

  let lastDropLog = 0;
  server.on('drop', () => {
    const now = clock.now();
    if (now - lastDropLog < DROP_LOG_INTERVAL_MS) return;
    lastDropLog = now;
    logger.warn(
      { maxConnections },
      'connections past server.maxConnections (INTAKE_MAX_CONNECTIONS) are being closed on arrival',
    );
  });

  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => reject(listenError(error, host, port));
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  return server;
}

const guards = new WeakMap<Server, SlowClientGuard>();

/** Hand the requests of a server made by `listen` to `handler` from now on (the app, once it has started). */
export function serve(server: Server, handler: RequestListener): void {
  const guard = guards.get(server);
  if (!guard) throw new Error('serve() takes a server made by listen()');
  guard.serve(handler);
}

/**
 * What the process answers while the store opens (a SQLite file with a large backlog takes
 * seconds): alive, not ready, and `503 starting` with a short Retry-After for everything else,
 * so platforms retry instead of failing, and a balancer waits for `/readyz`.
 */
export function whileStarting(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0];
  const [status, body] =
    path === '/healthz'
      ? [200, { ok: true, starting: true }]
      : path === '/readyz'
        ? [503, { ready: false, problems: ['starting: opening the store'] }]
        : [503, { error: { code: 'starting', message: 'The service is starting (opening its store); retry shortly' } }];
  req.resume();
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    ...(status === 503 ? { 'retry-after': '1' } : {}),
  });
  res.end(JSON.stringify(body));
}

/** A listen failure as one line naming the setting to change. */
function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  switch (error.code) {
    case 'EADDRINUSE':
      return new ConfigError(
        `server.port / PORT ${port} is in use by another process on ${host}; stop it or choose another port`,
        { cause: error },
      );
    case 'EACCES':
      return new ConfigError(
        `server.port / PORT ${port} needs privileges this process lacks on ${host}; choose a port above 1023`,
        { cause: error },
      );
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return new ConfigError(`server.host / HOST "${host}" is not an address of this machine`, { cause: error });
    default:
      return error;
  }
}
