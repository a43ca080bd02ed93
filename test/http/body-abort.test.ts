import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { readRawBody } from '../../src/http/body.js';

describe('readRawBody when the client hangs up', () => {
  it('throws client_closed (499), not a raw socket error, when the body stops halfway', async () => {
    const outcome = new Promise<unknown>((resolve) => {
      let client: ReturnType<typeof connect> | undefined;
      const server = createServer((req: IncomingMessage) => {
        readRawBody(req, 1024 * 1024).then(resolve, resolve).finally(() => server.close());
        // The first part of the body is in; the client hangs up before the rest.
        req.once('data', () => client?.destroy());
      });
      server.listen(0, '127.0.0.1', () => {
        client = connect((server.address() as AddressInfo).port, '127.0.0.1', () => {
          client?.write('POST /webhooks/generic HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"sessionKey":');
        });
        client.on('error', () => undefined);
      });
    });
    const error = await outcome;
    expect(error).toMatchObject({ name: 'RequestError', code: 'client_closed', status: 499 });
    expect((error as Error).message).toMatch(/closed the connection after 14 bytes/);
  });

  it('still reads a whole body', async () => {
    const server = createServer((req, res) => {
      readRawBody(req, 100).then((body) => res.end(`got ${body.length}`), (error: Error) => res.end(error.message));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { method: 'POST', body: '{"a":1}' });
    expect(await response.text()).toBe('got 7');
    server.close();
  });
});
