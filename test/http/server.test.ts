import { once } from 'node:events';
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { listen, serve, whileStarting } from '../../src/http/server.js';
import { recordingLogger, silent } from '../support/logger.js';

function app(): Koa {
  const koa = new Koa();
  koa.use((ctx) => {
    ctx.body = { ok: true };
  });
  return koa;
}

// One event stream: a few connections must still hold every stream (events.maxStreams <= server.maxConnections).
const config = (server: Record<string, unknown>) =>
  loadConfig({ env: {}, file: { server: { port: 0, ...server }, events: { maxStreams: 1 } } });

/** Open a raw socket and collect everything the server sends until it closes. */
async function rawClient(port: number, send?: string): Promise<{ socket: Socket; received: Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let data = '';
  socket.on('data', (chunk) => {
    data += chunk;
  });
  socket.on('error', () => undefined);
  const received = once(socket, 'close').then(() => data);
  if (send) socket.write(send);
  return { socket, received };
}

describe('the HTTP server limits (listen)', () => {
  const servers: Server[] = [];
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
  const start = async (settings: Record<string, unknown>, logger = silent) => {
    const server = await listen(app().callback(), config(settings), logger);
    servers.push(server);
    return { server, port: (server.address() as AddressInfo).port };
  };

  it('applies the configured timeouts and connection cap to the node server', async () => {
    const { server } = await start({
      headersTimeoutMs: 1234,
      requestTimeoutMs: 5678,
      keepAliveTimeoutMs: 65000,
      maxConnections: 7,
    });
    expect([server.headersTimeout, server.requestTimeout, server.keepAliveTimeout, server.maxConnections]).toEqual([
      1234, 5678, 65000, 7,
    ]);
  });

  it('cuts off a client that sends its headers too slowly, with 408', async () => {
    const { port } = await start({ headersTimeoutMs: 200, requestTimeoutMs: 400 });
    // Half the headers, then nothing: the socket must not stay open.
    const { socket, received } = await rawClient(port, 'POST /webhooks/generic HTTP/1.1\r\nHost: x\r\n');
    sockets.push(socket);
    expect(await received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes connections past maxConnections on arrival, and keeps serving the others', async () => {
    const { server, port } = await start({ maxConnections: 2 });
    const first = await rawClient(port);
    const second = await rawClient(port);
    sockets.push(first.socket, second.socket);
    // Both are accepted once the server has seen them.
    while ((await new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)))) < 2)
      await new Promise((r) => setImmediate(r));
    const third = await rawClient(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    sockets.push(third.socket);
    expect(await third.received).toBe('');
    first.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await first.received).toMatch(/^HTTP\/1\.1 200 [\s\S]*\{"ok":true\}$/);
  });

  it('answers a malformed request 400 and logs its code at warn, never its bytes', async () => {
    const { logger, lines } = recordingLogger('debug');
    const { port } = await start({}, logger);
    const { socket, received } = await rawClient(
      port,
      'POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token\r\nContent-Length: nope\r\n\r\n',
    );
    sockets.push(socket);
    expect(await received).toMatch(/^HTTP\/1\.1 400 /);
    const text = JSON.stringify(lines);
    expect(text).not.toContain('s3cret-token');
    expect(text).not.toContain('rawPacket');
    expect(lines).toEqual([expect.objectContaining({ level: 40, code: 'HPE_INVALID_CONTENT_LENGTH' })]);
  });

  it('names server.port / PORT when the port is taken', async () => {
    const { port } = await start({});
    await expect(listen(app().callback(), config({ port }), silent)).rejects.toThrow(
      `server.port / PORT ${port} is in use by another process`,
    );
  });
});

describe('the process while its store opens (whileStarting)', () => {
  it('is alive but not ready, answers webhooks 503 with Retry-After, then serves the app once it is handed over', async () => {
    const server = await listen(whileStarting, config({}), silent);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const ready = await fetch(`${url}/readyz`);
      expect([ready.status, ((await ready.json()) as any).ready]).toEqual([503, false]);
      const webhook = await fetch(`${url}/webhooks/generic`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"sessionKey":"a","content":"b"}',
      });
      expect(webhook.status).toBe(503);
      expect(webhook.headers.get('retry-after')).toBe('1');
      expect(((await webhook.json()) as any).error.code).toBe('starting');
      serve(server, app().callback());
      expect(await (await fetch(`${url}/webhooks/generic`, { method: 'POST', body: '{}' })).json()).toEqual({
        ok: true,
      });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
