import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { InboundEvent } from '../../../src/events/inbound.js';
import { fixtureBytes } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { readEvents } from '../../support/sse.js';
import { ManualClock } from '../../support/manual-clock.js';

const sign = (secret: string, body: Buffer | string) => `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;

describe('two OneBot channels on the real server', () => {
  let service: Running;
  // Time moves only when a test says so: both bots' copies land inside the window however slow the machine.
  let clock: ManualClock;
  afterEach(async () => service?.stop());

  const start = (extra: Record<string, unknown> = {}) =>
    startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        correlation: { noticeHoldMs: 150 },
        channels: [
          { id: 'qq-a', adapter: 'onebot', secret: 'secret-a', namespace: 'qq' },
          { id: 'qq-b', adapter: 'onebot', secret: 'secret-b', namespace: 'qq' },
        ],
        ...extra,
      },
      { clock: (clock = new ManualClock()) },
    );
  const deliver = (channel: string, secret: string, body: Buffer | string) =>
    postJson(`${service.url}/webhooks/${channel}`, body.toString(), { 'x-signature': sign(secret, body) });

  it('turns one group message delivered by both bots into one processed message that replies through the mentioned bot', async () => {
    service = await start();
    const seen: Array<{ handler: string; bot?: string }> = [];
    service.intake.handle('message.group', (e: InboundEvent) => {
      seen.push({ handler: 'once', bot: e.botId });
    });
    service.intake.handle('!message', (e: InboundEvent) => {
      seen.push({ handler: 'every', bot: e.botId });
    });
    const a = await deliver('qq-a', 'secret-a', fixtureBytes('onebot', 'napcat-group.json'));
    expect(a.status).toBe(204);
    await clock.advance(50);
    const b = await deliver('qq-b', 'secret-b', fixtureBytes('onebot', 'gocqhttp-group.json'));
    expect(b.status).toBe(204);
    await clock.advance(100);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.data).toMatchObject({
      sessionKey: 'qq:group:123456789',
      content: '看这个',
      merged: 1,
      sourceChannel: 'onebot',
      channel: 'qq-a',
      sender: { id: '12345678' },
      conversation: { type: 'group', id: '123456789' },
      bots: [
        { channel: 'qq-a', botId: '10001000' },
        { channel: 'qq-b', botId: '20002000' },
      ],
      mentionedBots: [{ channel: 'qq-b', botId: '20002000' }],
      replyBot: { channel: 'qq-b', botId: '20002000' },
      schemaVersion: 1,
      // The answering bot is B, whose copy came second: its own message id and its view of the quote, never A's.
      reply: {
        channel: 'qq-b',
        botId: '20002000',
        params: { message_type: 'group', group_id: 123456789, message_id: 884213 },
      },
      quote: { messageId: '884200' },
      parts: [
        {
          messageId: '10001000:-2147480001',
          senderId: '12345678',
          quote: { messageId: '884200' },
          bots: [
            { channel: 'qq-a', botId: '10001000', messageId: '-2147480001' },
            { channel: 'qq-b', botId: '20002000', messageId: '884213' },
          ],
        },
      ],
    });
    expect(seen).toEqual([
      { handler: 'once', bot: '10001000' },
      { handler: 'every', bot: '10001000' },
      { handler: 'every', bot: '20002000' },
    ]);
    await clock.advance(1000);
    expect(await service.intake.store.outboxAfter(0, 10)).toHaveLength(1);
    const stats = (await (await fetch(`${service.url}/v1/stats`)).json()) as any;
    expect(stats.correlator).toMatchObject({ observed: 2, duplicates: 1 });
    expect(stats.channels['qq-b']).toMatchObject({ received: 1, correlated: 1 });
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/inbox_correlator_duplicates_total 1/);
    // The trace of bot B's copy follows the first delivery into the output it joined.
    const trace = (await (
      await fetch(`${service.url}/v1/trace/${encodeURIComponent('20002000:884213')}`)
    ).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.channel, a.verdict])).toEqual([
      ['qq-a', 'accepted'],
      ['qq-b', 'correlated'],
    ]);
    expect(trace.outputs.map((o: any) => o.id)).toEqual([frame?.data.id]);
  });

  it("merges two messages both bots delivered into one output whose parts keep each bot's own message ids, and replies through the first arrival with its own id", async () => {
    service = await start({ debounce: { windowMs: 200, maxWaitMs: 1000 } });
    const napcat = JSON.parse(fixtureBytes('onebot', 'napcat-group.json').toString());
    const gocq = JSON.parse(fixtureBytes('onebot', 'gocqhttp-group.json').toString());
    const second = {
      a: { ...napcat, message_id: 1002, message: [{ type: 'text', data: { text: '第二句' } }], raw_message: '第二句' },
      b: { ...gocq, message_id: 884214, message: '第二句', raw_message: '第二句' },
    };
    for (const [channel, secret, body] of [
      ['qq-a', 'secret-a', napcat],
      ['qq-b', 'secret-b', gocq],
      ['qq-a', 'secret-a', second.a],
      ['qq-b', 'secret-b', second.b],
    ] as const) {
      expect((await deliver(channel, secret, JSON.stringify(body))).status).toBe(204);
      await clock.advance(50);
    }
    await clock.advance(200);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.data).toMatchObject({
      schemaVersion: 1,
      content: '看这个第二句',
      merged: 2,
      messageIds: ['10001000:-2147480001', '10001000:1002'],
      // The last part mentions no one: the first arrival (bot A) answers, quoting its own copy.
      replyBot: { channel: 'qq-a', botId: '10001000' },
      reply: {
        channel: 'qq-a',
        botId: '10001000',
        params: { message_type: 'group', group_id: 123456789, message_id: 1002 },
      },
      quote: { messageId: '-2147480000' },
      parts: [
        {
          messageId: '10001000:-2147480001',
          bots: [
            { channel: 'qq-a', botId: '10001000', messageId: '-2147480001' },
            { channel: 'qq-b', botId: '20002000', messageId: '884213' },
          ],
        },
        {
          messageId: '10001000:1002',
          bots: [
            { channel: 'qq-a', botId: '10001000', messageId: '1002' },
            { channel: 'qq-b', botId: '20002000', messageId: '884214' },
          ],
        },
      ],
    });
    expect(frame?.data.parts[1].quote).toBeUndefined();
  });

  it('answers a go-cqhttp retry of the same delivery as a duplicate', async () => {
    service = await start();
    const body = fixtureBytes('onebot', 'napcat-group.json');
    await deliver('qq-a', 'secret-a', body);
    await deliver('qq-a', 'secret-a', body);
    await clock.advance(100);
    await until(async () => (await service.intake.store.outboxAfter(0, 10)).length === 1);
    expect(service.intake.metrics.channelStats()['qq-a']).toMatchObject({ received: 2, deduped: 1 });
  });

  it("emits a notice once, naming every bot, with each bot's own request flag", async () => {
    service = await start();
    const request = JSON.parse(fixtureBytes('onebot', 'request-group-add.json').toString());
    await deliver('qq-a', 'secret-a', JSON.stringify(request));
    await clock.advance(100);
    await deliver('qq-b', 'secret-b', JSON.stringify({ ...request, self_id: 20002000, flag: 'flag-from-bot-b' }));
    await clock.advance(150);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.event).toBe('chat.request');
    expect(frame?.data).toMatchObject({
      type: 'chat.request',
      detail: 'group',
      subType: 'add',
      sessionKey: 'qq:group:123456789',
      fields: { user_id: '77777', comment: 'let me in' },
      participants: [
        { channel: 'qq-a', botId: '10001000', ids: { flag: 'flag-from-bot-a' } },
        { channel: 'qq-b', botId: '20002000', ids: { flag: 'flag-from-bot-b' } },
      ],
    });
    await clock.advance(1000);
    expect(await service.intake.store.outboxAfter(0, 10)).toHaveLength(1);
  });

  it("keeps every bot's request flag when the process restarts during the notice hold", async () => {
    clock = new ManualClock();
    service = await startService(
      {
        correlation: { noticeHoldMs: 1000 },
        channels: [
          { id: 'qq-a', adapter: 'onebot', secret: 'secret-a', namespace: 'qq' },
          { id: 'qq-b', adapter: 'onebot', secret: 'secret-b', namespace: 'qq' },
        ],
      },
      { clock },
    );
    const dir = service.dir;
    const request = JSON.parse(fixtureBytes('onebot', 'request-group-add.json').toString());
    await deliver('qq-a', 'secret-a', JSON.stringify(request));
    await deliver('qq-b', 'secret-b', JSON.stringify({ ...request, self_id: 20002000, flag: 'flag-from-bot-b' }));
    // A crash: the store closes without the held notice being flushed.
    service.server.closeAllConnections();
    service.server.close();
    await service.intake.store.close();

    // The service comes back 5 s later: the hold ran out while it was down.
    const later = new ManualClock(clock.now() + 5_000);
    service = await startService(
      {
        correlation: { noticeHoldMs: 1000 },
        channels: [
          { id: 'qq-a', adapter: 'onebot', secret: 'secret-a', namespace: 'qq' },
          { id: 'qq-b', adapter: 'onebot', secret: 'secret-b', namespace: 'qq' },
        ],
      },
      { dir, clock: later },
    );
    await later.advance(10);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.data.participants).toMatchObject([
      { channel: 'qq-a', botId: '10001000', ids: { flag: 'flag-from-bot-a' } },
      { channel: 'qq-b', botId: '20002000', ids: { flag: 'flag-from-bot-b' } },
    ]);
  });

  it('drops messages sent by one of our own bots before handlers', async () => {
    service = await start({
      channels: [
        { id: 'qq-a', adapter: 'onebot', secret: 'secret-a' },
        { id: 'qq-b', adapter: 'onebot', secret: 'secret-b', botIds: ['30003000'] },
      ],
    });
    let handled = 0;
    service.intake.handle('!message', () => {
      handled++;
    });
    const fromBot = JSON.parse(fixtureBytes('onebot', 'private-vector.json').toString());
    // Bot 10001000 becomes known once it delivers anything; 30003000 is configured.
    await deliver('qq-a', 'secret-a', JSON.stringify(fromBot));
    const loop1 = await deliver(
      'qq-b',
      'secret-b',
      JSON.stringify({ ...fromBot, self_id: 20002000, user_id: 10001000, message_id: 2 }),
    );
    const loop2 = await deliver(
      'qq-b',
      'secret-b',
      JSON.stringify({ ...fromBot, self_id: 20002000, user_id: 30003000, message_id: 3 }),
    );
    expect([loop1.status, loop2.status]).toEqual([204, 204]);
    expect(handled).toBe(1);
    expect(service.intake.metrics.channelStats()['qq-b']).toMatchObject({ looped: 2 });
  });

  // The CQ-code regex this replaced read on to the end of the message from every "[CQ:": about
  // two minutes on this body, with every other request waiting, so the timeout fails it.
  it(
    'answers a signed 1 MiB message of CQ codes that never close and emits it as its text',
    { timeout: 20_000 },
    async () => {
      service = await start();
      const event = { ...JSON.parse(fixtureBytes('onebot', 'private-vector.json').toString()), raw_message: '' };
      const room = 1_048_576 - JSON.stringify({ ...event, message: '' }).length;
      const message = '[CQ:a,b=c'.repeat(Math.floor(room / 9));
      const body = JSON.stringify({ ...event, message });
      expect(body.length).toBeGreaterThan(1_048_576 - 9);
      expect((await deliver('qq-a', 'secret-a', body)).status).toBe(204);
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      await clock.advance(300);
      const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
      expect(frame?.data.content.length).toBe(message.length);
      expect(frame?.data.content === message).toBe(true);
    },
  );

  it('answers a bad, short or missing signature 401 with the JSON error, never 500', async () => {
    service = await start();
    const body = fixtureBytes('onebot', 'private-vector.json').toString();
    for (const signature of ['sha1=deadbeef', 'sha1=' + '0'.repeat(40), undefined]) {
      const response = await postJson(
        `${service.url}/webhooks/qq-a`,
        body,
        signature ? { 'x-signature': signature } : {},
      );
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('bad_signature');
    }
  });
});

describe('regression: two bots posting to one OneBot HTTP channel', () => {
  let service: Running;
  let clock: ManualClock;
  afterEach(async () => service?.stop());

  // Both bots report to one URL with one secret, each naming itself in X-Self-ID: no other channel in the namespace.
  const start = () =>
    startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        channels: [{ id: 'qq', adapter: 'onebot', secret: 'shared-secret' }],
      },
      { clock: (clock = new ManualClock()) },
    );
  const deliver = (selfId: string, body: Buffer) =>
    postJson(`${service.url}/webhooks/qq`, body.toString(), {
      'x-signature': sign('shared-secret', body),
      'x-self-id': selfId,
    });

  it('turns the group message both bots post, the very first after start, into one output that replies through the bot it @-mentions', async () => {
    service = await start();
    // The fixtures @-mention bot B (20002000); A's copy comes first.
    expect((await deliver('10001000', fixtureBytes('onebot', 'napcat-group.json'))).status).toBe(204);
    await clock.advance(50);
    expect((await deliver('20002000', fixtureBytes('onebot', 'gocqhttp-group.json'))).status).toBe(204);
    await clock.advance(100);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame?.data).toMatchObject({
      sessionKey: 'qq:group:123456789',
      content: '看这个',
      merged: 1,
      channel: 'qq',
      bots: [
        { channel: 'qq', botId: '10001000' },
        { channel: 'qq', botId: '20002000' },
      ],
      replyBot: { channel: 'qq', botId: '20002000' },
      reply: { channel: 'qq', botId: '20002000', params: { message_id: 884213 } },
    });
    await clock.advance(1000);
    expect(await service.intake.store.outboxAfter(0, 10)).toHaveLength(1);
    expect(service.intake.metrics.channelStats().qq).toMatchObject({ received: 2, correlated: 1 });
  });
});

describe("regression: an HTTP POST whose X-Self-ID is not the body's self_id", () => {
  let service: Running;
  afterEach(async () => service?.stop());

  it('answers 403 self_id_mismatch, counts and trails it, and records nothing', async () => {
    service = await startService({ channels: [{ id: 'qq-a', adapter: 'onebot', secret: 'secret-a' }] });
    const body = fixtureBytes('onebot', 'napcat-group.json');
    const refused = await postJson(`${service.url}/webhooks/qq-a`, body.toString(), {
      'x-signature': sign('secret-a', body),
      'x-self-id': '20002000',
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'self_id_mismatch' });
    expect(refused.body.error.message).toMatch(
      /^Event on channel "qq-a" names bot 10001000 \(self_id\) but came from bot 20002000 \(X-Self-ID\): .*nothing was recorded/,
    );
    expect((await fetch(`${service.url}/v1/trace/${encodeURIComponent('10001000:-2147480001')}`)).status).toBe(404);
    expect(service.intake.metrics.channelStats()['qq-a']).toMatchObject({ rejected: 1 });
    const [verdict] = await readEvents(`${service.url}/v1/activity?after=0`, 1);
    expect(verdict?.data).toMatchObject({
      channel: 'qq-a',
      verdict: 'rejected',
      reason: expect.stringMatching(/^self_id_mismatch: /),
    });
    // The bot's own header on the same body is taken.
    const taken = await postJson(`${service.url}/webhooks/qq-a`, body.toString(), {
      'x-signature': sign('secret-a', body),
      'x-self-id': '10001000',
    });
    expect(taken.status).toBe(204);
    expect((await fetch(`${service.url}/v1/trace/${encodeURIComponent('10001000:-2147480001')}`)).status).toBe(200);
  });
});
