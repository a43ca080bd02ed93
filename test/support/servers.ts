import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mediaConnections } from '../../src/media/connections.js';

/** A 1x1 PNG. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

export interface TestServer {
  server: Server;
  port: number;
  hits: Map<string, number>;
  total(): number;
  /** Connections open now, and the most that were open at once. */
  connections(): { open: number; peak: number };
  /** Resolves once `path` has been requested `count` times (event-driven, no polling). */
  arrived(path: string, count?: number): Promise<void>;
  /** Resolves once no connection is open. */
  drained(): Promise<void>;
  close(): Promise<void>;
}

/** Start an HTTP server on `host`; every request is counted by path before `handler` runs. */
export async function serve(
  handler: (req: IncomingMessage, res: ServerResponse, hits: number) => void,
  host = '127.0.0.1',
): Promise<TestServer> {
  const hits = new Map<string, number>();
  const watchers = new Set<() => boolean>();
  const check = () => {
    for (const watcher of watchers) if (watcher()) watchers.delete(watcher);
  };
  const when = (condition: () => boolean) =>
    new Promise<void>((resolve) => {
      if (condition()) return resolve();
      watchers.add(() => (condition() ? (resolve(), true) : false));
    });
  let open = 0;
  let peak = 0;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    handler(req, res, n);
    check();
  });
  server.on('connection', (socket) => {
    open++;
    // Count the peak a loop turn later: a client that closed its previous connection before
    // opening this one may still have that close queued behind this accept.
    setImmediate(() =>
      setImmediate(() => {
        peak = Math.max(peak, open);
      }),
    );
    socket.once('close', () => {
      open--;
      check();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    hits,
    total: () => [...hits.values()].reduce((a, b) => a + b, 0),
    connections: () => ({ open, peak }),
    arrived: (path, count = 1) => when(() => (hits.get(path) ?? 0) >= count),
    drained: () => when(() => open === 0),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answer with `status` and a body that never ends (backpressure respected); counts bytes written into `sent`. */
export function endless(
  res: ServerResponse,
  status: number,
  sent: { bytes: number },
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'text/html', ...headers });
  const chunk = Buffer.alloc(16 * 1024, 0x61);
  const pump = () => {
    while (!res.destroyed) {
      sent.bytes += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
  };
  pump();
}

/** Connections whose client-side sockets are counted (open now, most open at once). */
export function countingConnections() {
  let open = 0;
  let peak = 0;
  const connections = mediaConnections({
    wrap: (connect) => (options, callback) =>
      connect(options, (error, socket) => {
        if (socket) {
          peak = Math.max(peak, ++open);
          socket.once('close', () => open--);
        }
        callback(error as Error, socket as never);
      }),
  });
  return { connections, open: () => open, peak: () => peak };
}
