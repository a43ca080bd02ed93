import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { SlowClientGuard } from '../../src/http/slow-clients.js';

/**
 * The guard on a real server and real sockets, swept by hand on a clock the test moves: the
 * server's clientError handler answers 408 as src/http/server.ts does.
 */
describe('SlowClientGuard', () => {
  const limits = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000 };
  let server: Server;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  async function setUp(
    handler: (req: IncomingMessage, res: ServerResponse) => void,
    overrides: Partial<typeof limits> = {},
  ) {
    let time = 1_000_000;
    server = createServer();
    server.on('clientError', (_error, socket: Socket) =>
      socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n'),
    );
    const guard = new SlowClientGuard(server, { ...limits, ...overrides }, handler, {
      ...systemClock,
      now: () => time,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    return {
      guard,
      advance: (ms: number) => {
        time += ms;
        guard.sweep();
      },
      /** A raw client, once the server has accepted it; `received` is all it got, at close. */
      async client(send?: string) {
        const accepted = once(server, 'connection');
        const socket = connect(port, '127.0.0.1');
        sockets.push(socket);
        let data = '';
        socket.on('data', (chunk) => {
          data += chunk;
        });
        socket.on('error', () => undefined);
        let closed = false;
        const received = once(socket, 'close').then(() => {
          closed = true;
          return data;
        });
        await accepted;
        if (send) socket.write(send);
        return {
          socket,
          received,
          get closed() {
            return closed;
          },
          get data() {
            return data;
          },
        };
      },
    };
  }

  /** Let the loop run, so writes and closes already made arrive. */
  const turn = () => new Promise((resolve) => setTimeout(resolve, 30));

  it('cuts a new connection that sends no complete request within the headers timeout, however long the keep-alive timeout', async () => {
    const { client, advance } = await setUp((_req, res) => res.end('ok'), { keepAliveTimeoutMs: 60_000 });
    const silent = await client();
    const slow = await client('POST /webhooks/generic HTTP/1.1\r\nHost: x\r\n');
    advance(limits.headersTimeoutMs - 1);
    await turn();
    expect([silent.closed, slow.closed]).toEqual([false, false]);
    advance(1);
    expect(await silent.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(await slow.received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('gives a body the request timeout from its headers, then cuts it with 408', async () => {
    const { client, advance } = await setUp((req, res) => {
      // Reads the body, as the webhook route does, and answers once it has ended.
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    const dribble = await client('POST /webhooks/generic HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":');
    await once(server, 'request');
    advance(limits.headersTimeoutMs * 2);
    await turn();
    expect(dribble.closed).toBe(false);
    advance(limits.requestTimeoutMs - limits.headersTimeoutMs * 2);
    expect(await dribble.received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('starts the wait again after each answer on a kept-alive socket, never shorter than the keep-alive timeout', async () => {
    const keepAliveTimeoutMs = limits.headersTimeoutMs * 2;
    const { client, advance } = await setUp((_req, res) => res.end('ok'), { keepAliveTimeoutMs });
    const kept = await client('GET /a HTTP/1.1\r\nHost: x\r\n\r\n');
    advance(limits.headersTimeoutMs - 1);
    await once(kept.socket, 'data');
    // The sweep sees the answer ended and starts the wait; the next request's headers stall.
    advance(0);
    kept.socket.write('GET /b HTTP/1.1\r\nHost: x\r\n');
    advance(keepAliveTimeoutMs - 1);
    await turn();
    expect(kept.closed).toBe(false);
    advance(1);
    const answers = await kept.received;
    expect(answers).toMatch(/^HTTP\/1\.1 200 /);
    expect(answers).toMatch(/HTTP\/1\.1 408 /);
  });

  it('cuts an event stream whose client pipelines a request that never finishes its headers', async () => {
    const { client, advance } = await setUp((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
    });
    const stream = await client('GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n');
    await once(stream.socket, 'data');
    advance(0);
    // A second request's headers, a byte at a time, behind the open stream.
    stream.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a');
    await turn();
    advance(1_000);
    advance(limits.headersTimeoutMs - 1);
    stream.socket.write('a');
    await turn();
    expect(stream.closed).toBe(false);
    advance(1);
    await stream.received;
    expect(stream.closed).toBe(true);
  });

  it('never cuts a response still being written (an event stream), and sweeps only while sockets are open', async () => {
    const { client, advance, guard } = await setUp((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
    });
    expect(guard.sweeping).toBe(false);
    const stream = await client('GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(guard.sweeping).toBe(true);
    await once(stream.socket, 'data');
    advance(limits.requestTimeoutMs * 10);
    await turn();
    expect(stream.closed).toBe(false);
    stream.socket.destroy();
    await stream.received;
    await turn();
    // The first sweep that finds no socket stops the timer: no wake-ups while idle.
    expect(guard.sweeping).toBe(true);
    advance(0);
    expect(guard.sweeping).toBe(false);
  });
});
