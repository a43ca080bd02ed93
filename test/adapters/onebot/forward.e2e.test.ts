import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { readEvents } from '../../support/sse.js';
import { ManualClock } from '../../support/manual-clock.js';
import { serve, type TestServer } from '../../support/servers.js';
import { forwardBot, groupMessage } from '../../connections/forward-bot.js';

const BOT = 10001000;
type Bot = Awaited<ReturnType<typeof forwardBot>>;

describe('OneBot over a forward WebSocket (we dial the bot)', () => {
  let service: Running | undefined;
  const bots: Bot[] = [];
  const servers: TestServer[] = [];
  afterEach(async () => {
    await service?.stop();
    service = undefined;
    for (const bot of bots.splice(0)) await bot.close();
    for (const server of servers.splice(0)) await server.close();
  });

  const start = async (
    bot: Bot,
    channel: Record<string, unknown> = {},
    debounce = { windowMs: 100, maxWaitMs: 300 },
  ) => {
    service = await startService({
      debounce,
      channels: [
        {
          id: 'qq-fwd',
          adapter: 'onebot',
          transport: 'ws',
          url: bot.url,
          accessToken: 'tok',
          namespace: 'qq',
          reconnectMinMs: 20,
          reconnectMaxMs: 100,
          actionTimeoutMs: 1000,
          ...channel,
        },
        { id: 'qq-http', adapter: 'onebot', secret: 'secret-b', namespace: 'qq' },
      ],
    });
    return service;
  };
  const connection = async (s: Running) => (await s.intake.connections()).find((view) => view.channel === 'qq-fwd');

  it('dials with the access token, learns the bot from get_login_info, and ingests its events as webhooks are', async () => {
    const bot = await forwardBot({ selfId: BOT, token: 'tok' });
    bots.push(bot);
    const s = await start(bot);
    const outputs: Output[] = [];
    s.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(async () => (await connection(s))?.botId === String(BOT));
    expect(bot.handshakes[0]?.authorization).toBe('Bearer tok');
    await until(() => bot.actions.length > 0);
    expect(bot.actions[0]).toMatchObject({ action: 'get_login_info' });
    const listed = (await (await fetch(`${s.url}/v1/connections`)).json()) as { connections: unknown[] };
    expect(listed.connections).toEqual([
      expect.objectContaining({
        channel: 'qq-fwd',
        adapter: 'onebot',
        transport: 'ws',
        botId: String(BOT),
        role: 'Universal',
        state: 'open',
        reconnects: 0,
        instance: expect.any(String),
      }),
    ]);
    bot.send(groupMessage(BOT, 501, 'hello over ws'));
    bot.send(groupMessage(BOT, 501, 'hello over ws')); // the bot sent it twice: one output
    await until(() => outputs.length === 1);
    expect(outputs[0]).toMatchObject({
      channel: 'qq-fwd',
      content: 'hello over ws',
      merged: 1,
      sessionKey: 'qq:group:123456789',
    });
    const stats = (await (await fetch(`${s.url}/v1/stats`)).json()) as any;
    expect(stats.channels['qq-fwd']).toMatchObject({ received: 2, deduped: 1 });
    // Nothing comes to this channel by HTTP.
    const post = await postJson(`${s.url}/webhooks/qq-fwd`, groupMessage(BOT, 502, 'posted'));
    expect(post.status).toBe(401);
    expect(post.body.error.message).toMatch(/forward WebSocket/);
  });

  it('correlates a group message read from the forward socket with the same message from an HTTP bot', async () => {
    const bot = await forwardBot({ selfId: BOT, token: 'tok' });
    bots.push(bot);
    // Both copies must land in one window on a real clock (the dialer's timers run on it): a wide one.
    const s = await start(bot, {}, { windowMs: 1000, maxWaitMs: 3000 });
    await until(async () => (await connection(s))?.botId === String(BOT));
    const frames = readEvents(`${s.url}/v1/events`, 1, {
      onOpen: async () => {
        // One group message as two bots see it: each its own message id, same sender, text and time.
        bot.send(groupMessage(BOT, 884000, 'look at this'));
        await until(async () => (await connection(s))?.lastEventAt !== null);
        const body = Buffer.from(JSON.stringify(groupMessage(20002000, 884213, 'look at this')));
        const b = await postJson(`${s.url}/webhooks/qq-http`, body.toString(), {
          'x-signature': `sha1=${createHmac('sha1', 'secret-b').update(body).digest('hex')}`,
        });
        expect(b.status).toBe(204);
      },
    });
    const [frame] = await frames;
    expect(frame?.data).toMatchObject({
      sessionKey: 'qq:group:123456789',
      merged: 1,
      channel: 'qq-fwd',
      bots: [
        { channel: 'qq-fwd', botId: '10001000' },
        { channel: 'qq-http', botId: '20002000' },
      ],
    });
  });

  it('sends actions on the dialled socket, picked by self_id', async () => {
    const bot = await forwardBot({ selfId: BOT, token: 'tok' });
    bots.push(bot);
    const s = await start(bot);
    await until(async () => (await connection(s))?.botId === String(BOT));
    const answer = await postJson(`${s.url}/v1/channels/qq-fwd/actions/send_group_msg?self_id=${BOT}`, {
      group_id: 1,
      message: 'hi',
    });
    expect(answer).toMatchObject({
      status: 200,
      body: { status: 'ok', retcode: 0, data: { message_id: 7, via: BOT } },
    });
    expect(bot.actions.at(-1)).toMatchObject({ action: 'send_group_msg', params: { group_id: 1, message: 'hi' } });
    const other = await postJson(`${s.url}/v1/channels/qq-fwd/actions/send_group_msg?self_id=999`, {});
    expect(other).toMatchObject({ status: 404, body: { error: { code: 'bot_not_connected' } } });
    expect(other.body.error.message).toMatch(/connected: 10001000/);
  });

  it('reconnects after the bot drops the socket (shown connecting, then open with a reconnect), and reads on', async () => {
    const bot = await forwardBot({ selfId: BOT, token: 'tok' });
    bots.push(bot);
    const s = await start(bot);
    const outputs: Output[] = [];
    s.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(async () => (await connection(s))?.state === 'open');
    bot.drop();
    await until(async () => (await connection(s))?.reconnects === 1 && (await connection(s))?.state === 'open');
    expect(bot.state.mostAtOnce).toBe(1);
    expect(bot.send(groupMessage(BOT, 601, 'after the drop'))).toBe(1);
    await until(() => outputs.length === 1);
    expect(outputs[0]?.content).toBe('after the drop');
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/inbox_connection_events_total\{channel="qq-fwd",transport="ws",event="reconnect"\} 1/);
  });

  it('keeps trying, backing off, while the bot refuses the token (401), never open, still serving', async () => {
    const bot = await forwardBot({ selfId: BOT, token: 'right' });
    bots.push(bot);
    const s = await start(bot);
    await until(() => bot.state.refused >= 3);
    expect(bot.state.connections).toBe(0);
    expect((await connection(s))?.state).toBe('connecting');
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
  });

  it('connects once a bot that was down comes up', async () => {
    const first = await forwardBot({ selfId: BOT, token: 'tok' });
    const port = first.port;
    await first.close(); // down before we start
    const s = await start({ ...first, url: `ws://127.0.0.1:${port}` } as Bot);
    await until(async () => (await connection(s))?.state === 'connecting');
    const bot = await forwardBot({ selfId: BOT, token: 'tok', port });
    bots.push(bot);
    await until(async () => (await connection(s))?.state === 'open');
    expect(bot.state.connections).toBe(1);
  });

  it('fails at start, naming the setting, for "transport": "ws" without a url or with a bad one', async () => {
    await expect(startService({ channels: [{ id: 'q', adapter: 'onebot', transport: 'ws' }] })).rejects.toThrow(
      /channels\[0\]\.url \(channel "q"\): is required with "transport": "ws"/,
    );
    await expect(
      startService({ channels: [{ id: 'q', adapter: 'onebot', transport: 'ws', url: 'http://x' }] }),
    ).rejects.toThrow(/channels\[0\]\.url .*ws:\/\/ or wss:\/\//);
    await expect(
      startService({
        channels: [{ id: 'q', adapter: 'onebot', transport: 'ws-reverse', accessToken: 't', apiUrl: 'http://x' }],
      }),
    ).rejects.toThrow(/channels\[0\]\.apiUrl .*only for "transport": "http"/);
  });
});

describe("regression: a second bot's frames on one forward socket", () => {
  let service: Running | undefined;
  let bot: Bot | undefined;
  afterEach(async () => {
    await service?.stop();
    await bot?.close();
  });

  it('refuses a frame naming another bot than the one the socket dialled (counted, trailed, nothing recorded), so the message is not said twice', async () => {
    bot = await forwardBot({ selfId: BOT, token: 'tok' });
    const clock = new ManualClock();
    // One forward channel alone in its namespace: its copies are never correlated.
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        channels: [{ id: 'qq-fwd', adapter: 'onebot', transport: 'ws', url: bot.url, accessToken: 'tok' }],
      },
      { clock },
    );
    const s = service;
    await until(async () => (await s.intake.connections()).some((view) => view.botId === String(BOT)));
    const outputs: Output[] = [];
    s.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const verdicts = await readEvents(`${s.url}/v1/activity`, 2, {
      onOpen: async () => {
        // What a bot framework serving two accounts on one socket sends for one group message.
        bot?.send(groupMessage(BOT, 884000, '今天天气怎么样'));
        await until(async () => (await fetch(`${s.url}/v1/trace/${BOT}%3A884000`)).status === 200);
        bot?.send(groupMessage(20002000, 884213, '今天天气怎么样'));
      },
    });
    expect(verdicts.map((frame) => frame.data.verdict)).toEqual(['accepted', 'rejected']);
    expect(verdicts[1]?.data.reason).toMatch(
      /^self_id_mismatch: Event on channel "qq-fwd" names bot 20002000 \(self_id\) but came from bot 10001000 \(the bot the channel's forward socket is connected to\)/,
    );
    await clock.advance(100);
    await until(() => outputs.length === 1);
    await clock.advance(1000);
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({
      content: '今天天气怎么样',
      merged: 1,
      bots: [{ channel: 'qq-fwd', botId: String(BOT) }],
      replyBot: { channel: 'qq-fwd', botId: String(BOT) },
    });
    expect(s.intake.metrics.channelStats()['qq-fwd']).toMatchObject({ received: 1, rejected: 1 });
    // Only the frame is refused: the socket stays, and the bot's own events still come in.
    bot.send(groupMessage(BOT, 884001, 'next'));
    await until(async () => (await fetch(`${s.url}/v1/trace/${BOT}%3A884001`)).status === 200);
    expect(bot.open).toBe(1);
  });

  it('correlates the copies of two bots dialled by two forward channels of one namespace, as the docs advise', async () => {
    bot = await forwardBot({ selfId: BOT, token: 'tok' });
    const other = await forwardBot({ selfId: 20002000, token: 'tok' });
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        channels: [
          { id: 'qq-a', adapter: 'onebot', transport: 'ws', url: bot.url, accessToken: 'tok' },
          { id: 'qq-b', adapter: 'onebot', transport: 'ws', url: other.url, accessToken: 'tok' },
        ],
      },
      { clock },
    );
    const s = service;
    try {
      await until(async () => (await s.intake.connections()).filter((view) => view.botId !== '').length === 2);
      const outputs: Output[] = [];
      s.intake.on('chat.processedMessage', (output) => {
        outputs.push(output);
      });
      bot.send(groupMessage(BOT, 884000, '今天天气怎么样'));
      other.send(groupMessage(20002000, 884213, '今天天气怎么样'));
      for (const id of [`${BOT}%3A884000`, '20002000%3A884213'])
        await until(async () => (await fetch(`${s.url}/v1/trace/${id}`)).status === 200);
      await clock.advance(100);
      await until(() => outputs.length === 1);
      await clock.advance(1000);
      expect(outputs).toHaveLength(1);
      expect(outputs[0]).toMatchObject({ content: '今天天气怎么样', merged: 1 });
      expect(outputs[0]?.bots.map((each) => each.botId).sort()).toEqual([String(BOT), '20002000']);
    } finally {
      await other.close();
    }
  });
});

describe('actions through a OneBot HTTP API (apiUrl)', () => {
  let service: Running | undefined;
  let api: TestServer | undefined;
  afterEach(async () => {
    await service?.stop();
    await api?.close();
  });

  it("POSTs the params to <apiUrl>/<action> with the access token and answers with the bot's JSON; 504 when it hangs", async () => {
    const seen: Array<{ url: string; auth: string | undefined; body: string }> = [];
    api = await serve((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        seen.push({ url: req.url ?? '', auth: req.headers.authorization, body });
        if (req.url === '/get_status') return; // never answers
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ status: 'ok', retcode: 0, data: { message_id: 9 } }));
      });
    });
    service = await startService({
      channels: [
        {
          id: 'qq',
          adapter: 'onebot',
          secret: 's',
          apiUrl: `http://127.0.0.1:${api.port}/`,
          accessToken: 'api-tok',
          actionTimeoutMs: 300,
        },
      ],
    });
    const answer = await postJson(`${service.url}/v1/channels/qq/actions/send_group_msg`, {
      group_id: 5,
      message: 'hi',
    });
    expect(answer).toMatchObject({ status: 200, body: { status: 'ok', retcode: 0, data: { message_id: 9 } } });
    expect(seen[0]).toEqual({
      url: '/send_group_msg',
      auth: 'Bearer api-tok',
      body: JSON.stringify({ group_id: 5, message: 'hi' }),
    });
    expect(await postJson(`${service.url}/v1/channels/qq/actions/get_status`, {})).toMatchObject({
      status: 504,
      body: { error: { code: 'action_timeout' } },
    });
  });
});
