import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { postJson, startService, until, type Running } from '../../support/helpers.js';

/** A bot on a reverse WebSocket that answers actions as OneBot does (or not at all). */
async function bot(
  service: Running,
  selfId: string,
  options: { role?: string; answer?: boolean } = {},
): Promise<{ socket: WebSocket; received: Array<{ action: string; params: unknown; echo: string }> }> {
  const socket = new WebSocket(`${service.url.replace('http', 'ws')}/webhooks/qq`, {
    headers: { authorization: 'Bearer tok', 'x-self-id': selfId, 'x-client-role': options.role ?? 'Universal' },
  });
  const received: Array<{ action: string; params: unknown; echo: string }> = [];
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { action: string; params: unknown; echo: string };
    received.push(frame);
    if (options.answer !== false)
      socket.send(JSON.stringify({ status: 'ok', retcode: 0, data: { message_id: 42, by: selfId }, echo: frame.echo }));
  });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return { socket, received };
}
const act = (service: Running, action: string, params: unknown, query = '') =>
  postJson(`${service.url}/v1/channels/qq/actions/${action}${query}`, params);

describe('actions through a reverse-WebSocket bot', () => {
  let service: Running;
  const sockets: WebSocket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.terminate();
    await service?.stop();
  });
  const start = () =>
    startService({
      channels: [
        { id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', actionTimeoutMs: 200 },
        { id: 'qq-http', adapter: 'onebot', secret: 's' },
      ],
    });

  it("sends {action, params, echo} on the bot's socket and answers with the bot's response", async () => {
    service = await start();
    const a = await bot(service, '10001');
    sockets.push(a.socket);
    const answer = await act(service, 'send_group_msg', { group_id: 123, message: 'hi' });
    expect(answer).toMatchObject({
      status: 200,
      body: { status: 'ok', retcode: 0, data: { message_id: 42, by: '10001' }, echo: expect.any(String) },
    });
    expect(a.received).toEqual([
      { action: 'send_group_msg', params: { group_id: 123, message: 'hi' }, echo: expect.any(String) },
    ]);
    // The library call is the same.
    await expect(service.intake.action('qq', 'get_login_info', {})).resolves.toMatchObject({ retcode: 0 });
  });

  it('picks the bot by self_id, skips Event-only sockets, and names the connected bots when the one asked for is not there', async () => {
    service = await start();
    const a = await bot(service, '10001');
    const b = await bot(service, '20002');
    const events = await bot(service, '30003', { role: 'Event' });
    sockets.push(a.socket, b.socket, events.socket);
    expect((await act(service, 'get_status', {}, '?self_id=20002')).body.data.by).toBe('20002');
    expect((await act(service, 'get_status', {})).body.data.by).toBe('10001');
    const missing = await act(service, 'get_status', {}, '?self_id=30003');
    expect(missing).toMatchObject({ status: 404, body: { error: { code: 'bot_not_connected' } } });
    expect(missing.body.error.message).toMatch(/connected: 10001, 20002/);
    expect(events.received).toEqual([]);
  });

  it('answers 504 when the bot never answers, ignores its late answer, and 502 when it disconnects first', async () => {
    service = await start();
    const silent = await bot(service, '10001', { answer: false });
    sockets.push(silent.socket);
    expect(await act(service, 'get_status', {})).toMatchObject({
      status: 504,
      body: { error: { code: 'action_timeout' } },
    });
    // A late answer finds nothing waiting and changes nothing.
    silent.socket.send(JSON.stringify({ status: 'ok', retcode: 0, data: null, echo: silent.received[0]!.echo }));
    const pending = act(service, 'get_status', {});
    await until(() => silent.received.length === 2);
    silent.socket.close();
    expect(await pending).toMatchObject({ status: 502, body: { error: { code: 'bot_disconnected' } } });
    await until(async () => (await service.intake.connections()).every((c) => c.state === 'closed'));
    expect(await act(service, 'get_status', {})).toMatchObject({
      status: 404,
      body: { error: { code: 'bot_not_connected' } },
    });
  });

  it('refuses a bad action name, a body that is not an object, an HTTP channel and an unknown channel', async () => {
    service = await start();
    expect(await act(service, 'rm%20-rf', {})).toMatchObject({ status: 400, body: { error: { code: 'bad_action' } } });
    expect(await act(service, 'send_msg', [1, 2])).toMatchObject({
      status: 400,
      body: { error: { code: 'bad_shape' } },
    });
    expect(await postJson(`${service.url}/v1/channels/qq-http/actions/send_msg`, {})).toMatchObject({
      status: 404,
      body: { error: { code: 'no_actions' } },
    });
    expect(await postJson(`${service.url}/v1/channels/nope/actions/send_msg`, {})).toMatchObject({
      status: 404,
      body: { error: { code: 'unknown_channel' } },
    });
  });
});
