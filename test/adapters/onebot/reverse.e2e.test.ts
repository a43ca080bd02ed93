import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { KEEP_CLOSED_MS } from '../../../src/connections/roster.js';
import type { ConnectionView } from '../../../src/events/connection.js';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import type { InstanceBus } from '../../../src/core/ports/index.js';
import { MemoryStore } from '../../../src/store/local/memory.js';
import { fixtureBytes } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { readEvents } from '../../support/sse.js';
import { ManualClock } from '../../support/manual-clock.js';
import { closed, connect, napcat } from '../../connections/reverse-bot.js';

const message = (id: number, text: string, selfId = 10001000) =>
  JSON.stringify({
    time: 1718000001,
    self_id: selfId,
    post_type: 'message',
    message_type: 'private',
    sub_type: 'friend',
    message_id: id,
    user_id: 12345678,
    sender: { user_id: 12345678, nickname: 'u' },
    message: [{ type: 'text', data: { text } }],
    raw_message: text,
  });

describe('OneBot over a reverse WebSocket', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  const start = (extra: Record<string, unknown> = {}, clock?: ManualClock) =>
    startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        channels: [
          { id: 'qq-ws', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', namespace: 'qq' },
          { id: 'qq-http', adapter: 'onebot', secret: 'secret-b', namespace: 'qq' },
        ],
        ...extra,
      },
      clock ? { clock } : {},
    );
  // Tests that expect frames merged or copies correlated move time themselves: however slow the machine, they land in one window.
  // A frame is admitted once its verdict is in the trail (the store step done); its deadline is armed right after.
  const admitted = (...platformIds: string[]) =>
    until(async () => {
      for (const id of platformIds) if ((await fetch(`${service.url}/v1/trace/${id}`)).status !== 200) return false;
      return true;
    }, 10_000);

  it('refuses a handshake without a token (401), with a wrong one (403), without X-Self-ID (400), and keeps nothing', async () => {
    service = await start();
    await expect(connect(service, { 'x-self-id': '1' })).rejects.toMatchObject({
      status: 401,
      body: { error: { code: 'token_missing' } },
    });
    await expect(connect(service, napcat('1', 'nope'))).rejects.toMatchObject({
      status: 403,
      body: { error: { code: 'token_mismatch' } },
    });
    await expect(connect(service, { authorization: 'Bearer tok' })).rejects.toMatchObject({
      status: 400,
      body: { error: { code: 'self_id_missing' } },
    });
    await expect(connect(service, { ...napcat(), 'x-client-role': 'Admin' })).rejects.toMatchObject({
      status: 400,
      body: { error: { code: 'bad_role' } },
    });
    // The token in the query works as well as the header.
    const socket = await connect(service, { 'x-self-id': '10001000' }, '/webhooks/qq-ws?access_token=tok');
    socket.close();
    expect((await service.intake.connections()).map((c) => c.state)).toEqual(['open']);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(
      /inbox_connection_events_total\{channel="qq-ws",transport="ws-reverse",event="refused"\} 4/,
    );
    // A POST to a socket channel would be unsigned: refused.
    expect((await postJson(`${service.url}/webhooks/qq-ws`, message(1, 'hi'))).status).toBe(401);
  });

  it('ingests event frames like webhooks, keeps meta events on the connection, and dedups a repeated frame', async () => {
    const clock = new ManualClock();
    service = await start({}, clock);
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const socket = await connect(service, napcat());
    socket.send(
      JSON.stringify({
        time: 1,
        self_id: 10001000,
        post_type: 'meta_event',
        meta_event_type: 'lifecycle',
        sub_type: 'connect',
      }),
    );
    // Lagrange's interval is in seconds.
    socket.send(
      JSON.stringify({
        time: 2,
        self_id: 10001000,
        post_type: 'meta_event',
        meta_event_type: 'heartbeat',
        status: { online: true },
        interval: 5,
      }),
    );
    socket.send(message(7, 'hello'));
    socket.send(message(7, 'hello'));
    socket.send(message(8, 'world'));
    await admitted('7', '8');
    await clock.advance(100);
    await until(() => outputs.length === 1);
    expect(outputs[0]).toMatchObject({
      sessionKey: 'qq:12345678',
      content: 'hello world',
      merged: 2,
      channel: 'qq-ws',
    });
    const [view] = await service.intake.connections();
    expect(view).toMatchObject({
      channel: 'qq-ws',
      adapter: 'onebot',
      transport: 'ws-reverse',
      botId: '10001000',
      role: 'Universal',
      state: 'open',
      heartbeatMs: 5000,
      reconnects: 0,
    });
    expect(view?.lastHeartbeatAt).toBeTypeOf('number');
    expect(view?.lastEventAt).toBeTypeOf('number');
    const listed = (await (await fetch(`${service.url}/v1/connections`)).json()) as { connections: unknown[] };
    expect(listed.connections).toHaveLength(1);
    const stats = (await (await fetch(`${service.url}/v1/stats`)).json()) as any;
    expect(stats.channels['qq-ws']).toMatchObject({ received: 3, deduped: 1 });
    socket.close();
  });

  it('correlates a group message from a socket bot with the same message from an HTTP bot', async () => {
    const clock = new ManualClock();
    service = await start({}, clock);
    const socket = await connect(service, napcat());
    socket.send(fixtureBytes('onebot', 'napcat-group.json').toString());
    await admitted('-2147480001');
    await clock.advance(50);
    const body = fixtureBytes('onebot', 'gocqhttp-group.json');
    const b = await postJson(`${service.url}/webhooks/qq-http`, body.toString(), {
      'x-signature': `sha1=${createHmac('sha1', 'secret-b').update(body).digest('hex')}`,
    });
    expect(b.status).toBe(204);
    await clock.advance(100);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.data).toMatchObject({
      sessionKey: 'qq:group:123456789',
      merged: 1,
      channel: 'qq-ws',
      bots: [
        { channel: 'qq-ws', botId: '10001000' },
        { channel: 'qq-http', botId: '20002000' },
      ],
      replyBot: { channel: 'qq-http', botId: '20002000' },
    });
    socket.close();
  });

  it('handles a flood in order, one frame at a time, and replaces an older socket of the same bot and role (1008)', async () => {
    const clock = new ManualClock();
    service = await start({ debounce: { windowMs: 200, maxWaitMs: 2000, maxMessages: 1000 } }, clock);
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const first = await connect(service, napcat());
    for (let i = 0; i < 200; i++) first.send(message(1000 + i, `m${i}`));
    await admitted('1199');
    await clock.advance(200);
    await until(() => outputs.length === 1, 10_000);
    expect(outputs[0]?.merged).toBe(200);
    expect(outputs[0]?.content.split(' ')).toEqual(Array.from({ length: 200 }, (_, i) => `m${i}`));

    const replaced = closed(first);
    const second = await connect(service, napcat());
    expect(await replaced).toMatchObject({ code: 1008 });
    await until(async () => (await service.intake.connections()).filter((c) => c.state === 'open').length === 1);
    expect((await service.intake.connections())[0]).toMatchObject({ state: 'open', reconnects: 1 });
    second.close();
  });

  it('closes a socket that sends a binary frame (1003) or a frame over the body limit (1009), and keeps one that sends a bad JSON frame', async () => {
    service = await start({ server: { bodyLimitBytes: 4096 } });
    const binary = await connect(service, napcat('1'));
    const binaryClosed = closed(binary);
    binary.send(Buffer.from([1, 2, 3]));
    expect(await binaryClosed).toMatchObject({ code: 1003 });

    const big = await connect(service, napcat('2'));
    const bigClosed = closed(big);
    big.send(message(1, 'x'.repeat(5000), 2));
    expect((await bigClosed).code).toBe(1009);

    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const bad = await connect(service, napcat('3'));
    bad.send('{not json');
    bad.send(JSON.stringify({ post_type: 'message', message_type: 'weird' }));
    bad.send(message(5, 'still here', 3));
    await until(() => outputs.length === 1);
    expect(outputs[0]?.content).toBe('still here');
    const stats = (await (await fetch(`${service.url}/v1/stats`)).json()) as any;
    expect(stats.channels['qq-ws']).toMatchObject({ rejected: 2 });
    bad.close();
  });

  it('closes every socket with 1001 on stop, after the frames it received are recorded', async () => {
    service = await start({ debounce: { windowMs: 60_000, maxWaitMs: 120_000 } });
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const socket = await connect(service, napcat());
    const bye = closed(socket);
    socket.send(message(9, 'last words'));
    await until(async () => (await service.intake.connections())[0]?.lastEventAt !== null);
    await service.stop();
    expect(await bye).toMatchObject({ code: 1001 });
    // The memory-less stop flushes open buffers: the frame is in the last output.
    expect(outputs.map((o) => o.content)).toEqual(['last words']);
  });

  it('survives 300 sockets opened at once and dropped without a close, and keeps serving', async () => {
    service = await start();
    const sockets = await Promise.all(
      Array.from({ length: 300 }, (_, i) => connect(service, napcat(String(50_000 + (i % 100))))),
    );
    // 100 bots, three sockets each: each newer one replaced the one before (1008).
    await until(async () => (await service.intake.connections()).filter((c) => c.state === 'open').length === 100);
    for (const socket of sockets) socket.terminate();
    await until(async () => (await service.intake.connections()).every((c) => c.state === 'closed'));
    // One entry per bot and role, not per socket.
    expect(await service.intake.connections()).toHaveLength(100);
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    const again = await connect(service, napcat('50000'));
    expect((await service.intake.connections()).find((c) => c.state === 'open')).toMatchObject({
      botId: '50000',
      reconnects: 3,
    });
    again.close();
  });
});

describe('regression: two bots on one reverse-WebSocket channel', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  // The README's multi-bot recipe: one `ws-reverse` channel, each bot a socket of its own, no other channel in the namespace.
  const start = (clock: ManualClock) =>
    startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        channels: [{ id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok' }],
      },
      { clock },
    );
  const admitted = (...platformIds: string[]) =>
    until(async () => {
      for (const id of platformIds)
        if ((await fetch(`${service.url}/v1/trace/${encodeURIComponent(id)}`)).status !== 200) return false;
      return true;
    }, 10_000);
  const groupMessage = (selfId: number, id: number, text: string) =>
    JSON.stringify({
      time: 1718000001,
      self_id: selfId,
      post_type: 'message',
      message_type: 'group',
      sub_type: 'normal',
      message_id: id,
      group_id: 123456789,
      user_id: 12345678,
      sender: { user_id: 12345678, nickname: 'u', card: '' },
      message: [{ type: 'text', data: { text } }],
      raw_message: text,
    });

  it('turns the group message both bots deliver, the very first after start, into one output listing both bots', async () => {
    const clock = new ManualClock();
    service = await start(clock);
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const a = await connect(service, napcat('10001000'), '/webhooks/qq');
    const b = await connect(service, napcat('20002000'), '/webhooks/qq');
    a.send(groupMessage(10001000, -2147480001, '今天天气怎么样'));
    await admitted('10001000:-2147480001');
    b.send(groupMessage(20002000, 884213, '今天天气怎么样'));
    await admitted('20002000:884213');
    await clock.advance(100);
    await until(() => outputs.length === 1);
    await clock.advance(1000);
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({
      sessionKey: 'qq:group:123456789',
      content: '今天天气怎么样',
      merged: 1,
      channel: 'qq',
      bots: [
        { channel: 'qq', botId: '10001000' },
        { channel: 'qq', botId: '20002000' },
      ],
      replyBot: { channel: 'qq', botId: '10001000' },
    });
    expect(service.intake.metrics.channelStats().qq).toMatchObject({ received: 2, correlated: 1 });
    a.close();
    b.close();
  });

  it('replies through the bot a message @-mentions even when the other bot delivered it first', async () => {
    const clock = new ManualClock();
    service = await start(clock);
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const a = await connect(service, napcat('10001000'), '/webhooks/qq');
    const b = await connect(service, napcat('20002000'), '/webhooks/qq');
    // The fixtures @-mention bot B (20002000); A's copy comes first.
    a.send(fixtureBytes('onebot', 'napcat-group.json').toString());
    await admitted('10001000:-2147480001');
    b.send(fixtureBytes('onebot', 'gocqhttp-group.json').toString());
    await admitted('20002000:884213');
    await clock.advance(100);
    await until(() => outputs.length === 1);
    expect(outputs[0]).toMatchObject({
      content: '看这个',
      merged: 1,
      bots: [
        { channel: 'qq', botId: '10001000' },
        { channel: 'qq', botId: '20002000' },
      ],
      mentionedBots: [{ channel: 'qq', botId: '20002000' }],
      replyBot: { channel: 'qq', botId: '20002000' },
      reply: { channel: 'qq', botId: '20002000', params: { message_id: 884213 } },
    });
    expect(service.intake.metrics.channelStats().qq).toMatchObject({ received: 2, correlated: 1 });
    a.close();
    b.close();
  });
});

describe('regression: a reverse socket posting as another bot', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  it("refuses a frame whose self_id is not the socket's X-Self-ID (counted, trailed, nothing recorded), keeps the socket, and takes the named bot's own copy", async () => {
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        channels: [{ id: 'qq-ws', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', namespace: 'qq' }],
      },
      { clock },
    );
    const a = await connect(service, napcat('10001000'));
    const b = await connect(service, napcat('20002000'));
    // Bot A sends an event naming bot B: credited to B, it would take B's message id and B's own copy would be a duplicate.
    const verdicts = await readEvents(`${service.url}/v1/activity`, 2, {
      onOpen: async () => {
        a.send(message(5, 'forged', 20002000));
        await until(
          async () =>
            ((await (await fetch(`${service.url}/v1/stats`)).json()) as any).channels['qq-ws']?.rejected === 1,
        );
        b.send(message(5, 'real', 20002000));
      },
    });
    expect(verdicts.map((frame) => frame.data.verdict)).toEqual(['rejected', 'accepted']);
    expect(verdicts[0]?.data.reason).toMatch(
      /^self_id_mismatch: Event on channel "qq-ws" names bot 20002000 \(self_id\) but came from bot 10001000 \(X-Self-ID\)/,
    );
    await clock.advance(100);
    const [output] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(output?.data).toMatchObject({
      content: 'real',
      merged: 1,
      messageIds: ['20002000:5'],
      replyBot: { channel: 'qq-ws', botId: '20002000' },
    });
    const stats = (await (await fetch(`${service.url}/v1/stats`)).json()) as any;
    expect(stats.channels['qq-ws']).toMatchObject({ received: 1, rejected: 1 });
    expect(stats.channels['qq-ws'].deduped ?? 0).toBe(0);
    // The socket stays open: A's own events still come in.
    expect(a.readyState).toBe(WebSocket.OPEN);
    a.send(message(6, 'mine', 10001000));
    await until(
      async () => (await fetch(`${service.url}/v1/trace/${encodeURIComponent('10001000:6')}`)).status === 200,
    );
    a.close();
    b.close();
  });
});

/** A store shared with no one whose bus keeps what this instance last published of its connections. */
class PublishingStore extends MemoryStore {
  published: ConnectionView[] = [];
  readonly bus: InstanceBus = {
    shareConnections: async (_instance, views) => {
      this.published = [...views];
    },
    sharedConnections: async () => this.published,
    shareCounters: async () => undefined,
    sharedCounters: async () => [],
    serveActions: async () => () => undefined,
    relayAction: async () => 'unheard',
  };
}

describe('regression: closed connections pile up in the list and in every publication', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  it('lists and publishes at most 100 closed connections a channel, each for 10 minutes after it closed', async () => {
    const clock = new ManualClock();
    const store = new PublishingStore();
    service = await startService(
      { channels: [{ id: 'qq-ws', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok' }] },
      { clock, store },
    );
    const listed = async () => service.intake.connections();
    // 150 bots come and go, 25 at a time.
    for (let batch = 0; batch < 6; batch++) {
      const sockets = await Promise.all(
        Array.from({ length: 25 }, (_, i) => connect(service, napcat(String(60_000 + batch * 25 + i)))),
      );
      await Promise.all(
        sockets.map((socket) => {
          const bye = closed(socket);
          socket.close();
          return bye;
        }),
      );
      await until(async () => (await listed()).every((view) => view.state === 'closed'));
      await clock.advance(1000);
    }
    const views = await listed();
    expect(views).toHaveLength(100);
    // The 100 closed last are kept: the first 50 bots are gone.
    expect(views.map((view) => Number(view.botId)).sort((a, b) => a - b)[0]).toBe(60_050);
    await until(() => store.published.length === 100 && store.published.every((view) => view.state === 'closed'));
    expect(JSON.stringify(store.published).length).toBeLessThan(100 * 400);

    // A bot that comes back within the 10 minutes is one reconnect.
    const back = await connect(service, napcat('60149'));
    await until(async () => (await listed()).some((view) => view.state === 'open'));
    expect((await listed()).find((view) => view.state === 'open')).toMatchObject({ botId: '60149', reconnects: 1 });
    const gone = closed(back);
    back.close();
    await gone;
    await until(async () => (await listed()).every((view) => view.state === 'closed'));

    // Ten minutes after the last closed, nothing is listed or published.
    await clock.advance(KEEP_CLOSED_MS);
    expect(await listed()).toEqual([]);
    await clock.advance(2000);
    await until(() => store.published.length === 0);
  });
});
