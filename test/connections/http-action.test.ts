import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpAction } from '../../src/connections/http-action.js';

/** A bot API on loopback whose every answer is `answer(response)`. */
async function botApi(answer: (response: import('node:http').ServerResponse) => void): Promise<Server> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => answer(response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describe('an action on a OneBot HTTP API', () => {
  const servers: Server[] = [];
  afterEach(() => {
    for (const server of servers.splice(0)) server.close();
  });
  const call = (server: Server, maxBytes: number) =>
    httpAction(
      { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, headers: {} },
      'qq',
      'get_forward_msg',
      { id: 'x' },
      { timeoutMs: 5_000, maxBytes },
    );

  it('gives the JSON answer of a bot within the limit', async () => {
    const server = await botApi((response) => response.end('{"status":"ok","data":{"messages":[]}}'));
    servers.push(server);
    expect(await call(server, 1024)).toEqual({ status: 'ok', data: { messages: [] } });
  });

  it('stops reading an answer past the limit and says so, whatever the bot keeps sending', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    const server = await botApi((response) => {
      // An answer without end: a chunk whenever the socket takes one, until the client goes away.
      const more = () => {
        while (!response.destroyed && response.write(chunk)) sent += chunk.length;
        if (!response.destroyed) response.once('drain', more);
      };
      response.on('close', () => undefined);
      more();
    });
    servers.push(server);
    const error = await call(server, 1_048_576).catch(
      (caught: unknown) => caught as { code: string; status: number; message: string },
    );
    expect(error).toMatchObject({ code: 'bot_api_error', status: 502 });
    expect((error as { message: string }).message).toMatch(/more than 1048576 bytes/);
    expect(sent).toBeLessThan(64 * 1_048_576);
  });

  it("sends a routed action's own path and headers for the bot it goes through", async () => {
    const seen: Array<{ url?: string; method?: string; headers: import('node:http').IncomingHttpHeaders }> = [];
    const server = createServer((request, response) => {
      seen.push({ url: request.url, method: request.method, headers: request.headers });
      request.resume();
      request.on('end', () => response.end('[{"id":"1"}]'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    const api = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      headers: { authorization: 'Bearer t' },
      route: async (action: string, params: Record<string, unknown>, botId?: string) => ({
        method: 'POST',
        path: `/${action}`,
        body: params,
        headers: { 'satori-user-id': botId ?? '' },
      }),
    };
    const answer = await httpAction(
      api,
      'sat',
      'message.create',
      { channel_id: '1' },
      { timeoutMs: 5_000, maxBytes: 1024 },
      undefined,
      '10001',
    );
    expect(answer).toEqual([{ id: '1' }]);
    expect(seen[0]).toMatchObject({
      url: '/v1/message.create',
      method: 'POST',
      headers: { authorization: 'Bearer t', 'satori-user-id': '10001' },
    });
  });
});
