import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { AdmitItem, AdmitVerdict } from '../../../src/core/ports/index.js';
import { MemoryStore } from '../../../src/store/local/memory.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { closed, connect as connectBot } from '../../connections/reverse-bot.js';

/*
 * The edges of a OneBot reverse socket: frames the pipeline does not know, a bot that stops
 * reading, NapCat's empty token, a peer gone half-open, and a store that cannot record.
 */

/** A bot on the channel `qq` of these tests (the shared helper's default is `qq-ws`). */
const connect = (
  service: Running,
  headers: Record<string, string>,
  path = '/webhooks/qq',
  options: WebSocket.ClientOptions = {},
): Promise<WebSocket> => connectBot(service, headers, path, options);
const napcat = (selfId = '10001000', token = 'tok') => ({
  authorization: `Bearer ${token}`,
  'x-self-id': selfId,
  'x-client-role': 'universal',
});
const message = (id: number, text: string) =>
  JSON.stringify({
    time: 1718000001,
    self_id: 10001000,
    post_type: 'message',
    message_type: 'private',
    sub_type: 'friend',
    message_id: id,
    user_id: 12345678,
    sender: { user_id: 12345678, nickname: 'u' },
    message: [{ type: 'text', data: { text } }],
    raw_message: text,
  });
const stats = async (service: Running) => ((await (await fetch(`${service.url}/v1/stats`)).json()) as any).channels.qq;

/** A store whose writes can be switched off, like a database that went away. */
class FlakyStore extends MemoryStore {
  down = false;
  override async admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
    if (this.down) throw new Error('connection refused');
    return super.admit(items, now);
  }
}

describe('a OneBot reverse socket at its edges', () => {
  let service: Running;
  const sockets: WebSocket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.terminate();
    await service?.stop();
  });
  const channel = (extra: Record<string, unknown> = {}) => ({
    id: 'qq',
    adapter: 'onebot',
    transport: 'ws-reverse',
    accessToken: 'tok',
    ...extra,
  });

  it('counts a frame with an unknown post_type as ignored, records nothing, and keeps the socket', async () => {
    service = await startService({ channels: [channel()], debounce: { windowMs: 50, maxWaitMs: 200 } });
    const contents: string[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      contents.push(output.content);
    });
    const socket = await connect(service, napcat());
    sockets.push(socket);
    socket.send(
      JSON.stringify({ time: 1, self_id: 10001000, post_type: 'message_sent_by_a_future_version', user_id: 1 }),
    );
    socket.send(message(3, 'after it'));
    await until(() => contents.length === 1);
    expect(contents).toEqual(['after it']);
    const counted = await stats(service);
    expect(counted).toMatchObject({ received: 1, ignored: 1 });
    expect(counted.rejected ?? 0).toBe(0);
    expect(socket.readyState).toBe(WebSocket.OPEN);
  });

  it('answers 503 bot_not_reading to an action once over 1 MiB waits on the socket of a bot that stopped reading', async () => {
    service = await startService({
      channels: [channel({ actionTimeoutMs: 10_000 })],
      server: { bodyLimitBytes: 4 << 20 },
    });
    const socket = await connect(service, napcat());
    sockets.push(socket);
    // The bot stops reading: our writes fill the kernel's buffers, then queue in the process.
    socket.pause();
    const big = { user_id: 1, message: 'x'.repeat(1 << 20) };
    const waiting: Array<Promise<unknown>> = [];
    let refused: Awaited<ReturnType<typeof postJson>> | undefined;
    for (let i = 0; i < 64 && !refused; i++) {
      const answer = postJson(`${service.url}/v1/channels/qq/actions/send_private_msg`, big);
      // An action that was sent waits for an answer that never comes; a refused one answers at once
      // (a 1 MiB round trip: 150 ms leaves room on a loaded machine, and a late refusal only costs a turn).
      const first = await Promise.race([
        answer,
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 150)),
      ]);
      if (first) refused = first;
      else waiting.push(answer.catch(() => undefined));
    }
    expect(refused).toMatchObject({ status: 503, body: { error: { code: 'bot_not_reading' } } });
    expect(refused?.headers.get('retry-after')).toBe('5');
    expect(refused?.body.error.message).toMatch(/not reading its socket \(\d+ bytes waiting\)/);
    expect(waiting.length).toBeGreaterThan(0);
    socket.terminate();
    await Promise.all(waiting);
  }, 30_000);

  it('takes NapCat\'s empty "Bearer " on a channel with verify false, and a token in ?access_token= beside it', async () => {
    service = await startService({
      channels: [channel({ id: 'open', accessToken: undefined, verify: false }), channel()],
    });
    const open = await connect(service, { authorization: 'Bearer ', 'x-self-id': '1' }, '/webhooks/open');
    sockets.push(open);
    const queried = await connect(
      service,
      { authorization: 'Bearer ', 'x-self-id': '2' },
      '/webhooks/qq?access_token=tok',
    );
    sockets.push(queried);
    await expect(
      connect(service, { authorization: 'Bearer ', 'x-self-id': '3' }, '/webhooks/qq?access_token=nope'),
    ).rejects.toMatchObject({ status: 403 });
    await expect(
      connect(service, { authorization: 'Bearer ', 'x-self-id': '3' }, '/webhooks/qq'),
    ).rejects.toMatchObject({ status: 401 });
    expect(
      (await service.intake.connections())
        .filter((c) => c.state === 'open')
        .map((c) => `${c.channel}/${c.botId}`)
        .sort(),
    ).toEqual(['open/1', 'qq/2']);
  });

  it('drops a socket whose peer stopped answering pings (half-open) and keeps one that answers', async () => {
    service = await startService({ channels: [channel()] }, { socketPingMs: 250 });
    const answering = await connect(service, napcat('1'));
    sockets.push(answering);
    // autoPong off: the TCP connection stays up but nothing answers, as behind a dead NAT entry.
    const silent = await connect(service, napcat('2'), '/webhooks/qq', { autoPong: false });
    sockets.push(silent);
    const dropped = closed(silent);
    expect((await dropped).code).toBe(1006);
    // The one that answers lived through the same pings.
    expect(answering.readyState).toBe(WebSocket.OPEN);
    await until(async () => (await service.intake.connections()).some((c) => c.state === 'closed'));
    expect((await service.intake.connections()).map((c) => `${c.botId}:${c.state}`).sort()).toEqual([
      '1:open',
      '2:closed',
    ]);
  });

  it('closes a socket 1013 when the store cannot record its frame, and records the frame a reconnect sends again', async () => {
    const store = new FlakyStore();
    service = await startService({ channels: [channel()], debounce: { windowMs: 50, maxWaitMs: 200 } }, { store });
    const contents: string[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      contents.push(output.content);
    });
    const socket = await connect(service, napcat());
    sockets.push(socket);
    const bye = closed(socket);
    store.down = true;
    socket.send(message(1, 'lost for now'));
    const close = await bye;
    expect(close.code).toBe(1013);
    expect(close.reason).toMatch(/^not recorded/);
    expect(contents).toEqual([]);

    store.down = false;
    const again = await connect(service, napcat());
    sockets.push(again);
    again.send(message(1, 'lost for now'));
    await until(() => contents.length === 1);
    expect(contents).toEqual(['lost for now']);
  });
});

describe("regression: a reverse socket to a channel without an access token took any page's upgrade", () => {
  let service: Running;
  const sockets: WebSocket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.terminate();
    await service?.stop();
  });
  /** An upgrade whose refusal keeps its JSON body. */
  const refusal = (path: string, headers: Record<string, string>) =>
    connect(service, headers, path).then(
      (socket) => {
        sockets.push(socket);
        return undefined;
      },
      (error: { status: number; body?: unknown }) => error,
    );

  it("refuses a foreign Origin or a rebinding Host with 403 on a channel with verify false, counts it, keeps nothing, and takes a bot's upgrade", async () => {
    service = await startService({
      channels: [
        { id: 'open', adapter: 'onebot', transport: 'ws-reverse', verify: false },
        { id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok' },
      ],
    });
    const bot = { authorization: 'Bearer ', 'x-self-id': '1' };
    const fromPage = await refusal('/webhooks/open', { ...bot, origin: 'https://evil.example' });
    expect(fromPage).toMatchObject({ status: 403, body: { error: { code: 'cross_origin' } } });
    expect((fromPage as any).body.error.message).toMatch(
      /^A WebSocket to channel "open" came from a page on https:\/\/evil\.example: refused/,
    );
    const rebound = await refusal('/webhooks/open', { ...bot, host: 'evil.example:8787' });
    expect(rebound).toMatchObject({ status: 403, body: { error: { code: 'host_not_allowed' } } });
    expect((rebound as any).body.error.message).toMatch(/add "evil\.example" to server\.allowedHosts/);
    expect(await (await fetch(`${service.url}/metrics`)).text()).toMatch(
      /inbox_connection_events_total\{channel="open",transport="ws-reverse",event="refused"\} 2/,
    );
    expect(await service.intake.connections()).toEqual([]);

    // NapCat: no Origin, a loopback Host; a page of the service's own origin too.
    expect(await refusal('/webhooks/open', bot)).toBe(undefined);
    expect(await refusal('/webhooks/open', { ...bot, 'x-self-id': '2', origin: service.url })).toBe(undefined);
    // The access token authenticates a channel that has one, whatever the page.
    expect(
      await refusal('/webhooks/qq', {
        authorization: 'Bearer tok',
        'x-self-id': '3',
        origin: 'https://evil.example',
        host: 'evil.example',
      }),
    ).toBe(undefined);
    expect((await service.intake.connections()).map((c) => `${c.channel}/${c.botId}`).sort()).toEqual([
      'open/1',
      'open/2',
      'qq/3',
    ]);
  });

  it('takes the names of server.allowedHosts', async () => {
    service = await startService({
      server: { allowedHosts: ['intake.internal'] },
      channels: [{ id: 'open', adapter: 'onebot', transport: 'ws-reverse', verify: false }],
    });
    expect(await refusal('/webhooks/open', { 'x-self-id': '1', host: 'intake.internal:8787' })).toBe(undefined);
    expect(await refusal('/webhooks/open', { 'x-self-id': '2', host: 'other.internal:8787' })).toMatchObject({
      status: 403,
    });
  });
});
