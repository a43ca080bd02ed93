import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A 1x1 PNG. */
export const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

export interface TestServer {
  server: Server;
  port: number;
  hits: Map<string, number>;
  total(): number;
  close(): Promise<void>;
}

/** Start an HTTP server on `host`; every request is counted by path before `handler` runs. */
export async function serve(handler: (req: IncomingMessage, res: ServerResponse, hits: number) => void, host = '127.0.0.1'): Promise<TestServer> {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    handler(req, res, n);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    hits,
    total: () => [...hits.values()].reduce((a, b) => a + b, 0),
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
