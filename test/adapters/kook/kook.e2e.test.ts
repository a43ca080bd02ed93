import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';
import { kookBody } from './seal.js';

const TOKEN = 'kook-verify-token';
const KEY = 'kook-encrypt-key';
const BOT = '10001';

describe('a KOOK channel on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let host: TestServer;
  beforeAll(async () => {
    // KOOK's asset host on loopback: an uploaded image.
    host = await serve((req, res) => {
      if (req.url === '/assets/abc.png') {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
        return;
      }
      res.statusCode = 404;
      res.end('{"code":404,"message":"not found"}');
    });
  });
  afterAll(() => host.close());
  afterEach(async () => service?.stop());

  const start = async (settings: Record<string, unknown> = { botId: BOT }) => {
    clock = new ManualClock();
    service = await startService(
      {
        store: 'memory',
        debounce: { windowMs: 100, maxWaitMs: 400 },
        media: { allowHosts: [`127.0.0.1:${host.port}`], retries: 0 },
        channels: [
          {
            id: 'kk',
            adapter: 'kook',
            verifyToken: TOKEN,
            encryptKey: KEY,
            apiBaseUrl: `http://127.0.0.1:${host.port}`,
            ...settings,
          },
        ],
      },
      { clock },
    );
    const messages: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (m) => {
      messages.push(m);
    });
    return messages;
  };
  /** POST a body as KOOK does: deflated, of type application/json. */
  const post = async (body: Buffer) => {
    const response = await fetch(`${service.url}/webhooks/kk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const text = await response.text();
    return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text };
  };
  /** An event as KOOK pushes it to this channel: token set, encrypted, then deflated. */
  const push = (event: any) => {
    event.d.verify_token = TOKEN;
    return post(kookBody(event, { encryptKey: KEY }));
  };
  /** A fixture message with this msg_id and text (KMarkdown), stamped now. */
  const message = (name: string, msgId: string, content?: string) => {
    const event = fixture('kook', name);
    event.d.msg_id = msgId;
    event.d.msg_timestamp = clock.now();
    if (content !== undefined) event.d.content = content;
    return event;
  };
  const quiet = () => clock.advance(200);
  const outbox = () => service.intake.store.outboxAfter(0, 10);

  it('answers the challenge, merges three fragments, emits a retry once, and names the channel in the trace', async () => {
    const messages = await start();
    const challenge = await push(fixture('kook', 'challenge.json'));
    expect(challenge).toMatchObject({ status: 200, body: { challenge: 'bkes654x09XY' } });
    for (const [id, text] of [
      ['m-1', '帮我查一下'],
      ['m-2', '订单'],
      ['m-3', 'ORD-123'],
    ] as const)
      expect((await push(message('text-person.json', id, text))).status).toBe(200);
    // KOOK retries a delivery it thinks failed: the same msg_id.
    expect((await push(message('text-person.json', 'm-2', '订单'))).status).toBe(200);
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'kook:777',
      content: '帮我查一下订单 ORD-123',
      merged: 3,
      messageIds: ['m-1', 'm-2', 'm-3'],
      sourceChannel: 'kook',
      channel: 'kk',
      sender: { id: '777', name: 'Ana' },
      replyBot: { channel: 'kk', botId: BOT },
    });
    // A retry a minute later, after the output (KOOK's last comes about 2 min after the first).
    await clock.advance(60_000);
    expect((await push(message('text-person.json', 'm-3', 'ORD-123'))).status).toBe(200);
    await quiet();
    expect(messages).toHaveLength(1);
    expect(await outbox()).toHaveLength(1);
    const trace = (await (await fetch(`${service.url}/v1/trace/m-2`)).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.id, a.channel, a.verdict])).toEqual([
      ['m-1', 'kk', 'accepted'],
      ['m-2', 'kk', 'accepted'],
      ['m-3', 'kk', 'accepted'],
      ['m-2', 'kk', 'duplicate'],
      ['m-3', 'kk', 'duplicate'],
    ]);
  });

  it('downloads an image into the media folder and marks a message that mentions our bot', async () => {
    const messages = await start();
    const image = message('image-group.json', 'm-img');
    image.d.content = `http://127.0.0.1:${host.port}/assets/abc.png`;
    image.d.extra.attachments.url = image.d.content;
    expect((await push(image)).status).toBe(200);
    expect((await push(message('kmarkdown-group-mention.json', 'm-at'))).status).toBe(200);
    await quiet();
    await until(() => messages.length === 1);
    const [output] = messages;
    expect(output).toMatchObject({
      sessionKey: 'kook:group:chan1',
      content: '@bot 帮我查一下订单',
      mentionedBots: [{ channel: 'kk', botId: BOT }],
      mediaErrors: [],
      media: [{ type: 'image', mime: 'image/png', bytes: PNG.length }],
    });
    const stored = join(service.dir, output!.media[0]!.path);
    expect(existsSync(stored) && readFileSync(stored).equals(PNG)).toBe(true);
  });

  it('keeps a message deleted inside its window from the agent', async () => {
    const messages = await start();
    expect((await push(message('text-person.json', 'm-gone', '发错了'))).status).toBe(200);
    const deleted = fixture('kook', 'deleted-private-message.json');
    deleted.d.extra.body.msg_id = 'm-gone';
    deleted.d.extra.body.deleted_at = clock.now();
    deleted.d.msg_timestamp = clock.now();
    expect((await push(deleted)).status).toBe(200);
    await quiet();
    await clock.advance(1000);
    expect(messages).toEqual([]);
    expect(await outbox()).toEqual([]);
    const trace = (await (await fetch(`${service.url}/v1/trace/m-gone`)).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.channel, a.verdict])).toEqual([
      ['kk', 'accepted'],
      ['kk', 'retracted'],
      ['kk', 'retracted'],
    ]);
  });

  it('puts the new text of a message edited inside its window in the output', async () => {
    const messages = await start();
    expect((await push(message('kmarkdown-group-mention.json', 'm-typo'))).status).toBe(200);
    const updated = fixture('kook', 'updated-message.json');
    updated.d.extra.body.msg_id = 'm-typo';
    updated.d.extra.body.updated_at = clock.now();
    updated.d.msg_timestamp = clock.now();
    expect((await push(updated)).status).toBe(200);
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'kook:group:chan1',
      messageIds: ['m-typo'],
      content: '@10001 帮我查一下订单 ORD-1',
    });
  });

  it("loops our own bot's messages (botId): recorded as looped, never emitted", async () => {
    const messages = await start();
    const own = message('text-person.json', 'm-own', '我是机器人');
    own.d.author_id = BOT;
    own.d.target_id = '777';
    expect((await push(own)).status).toBe(200);
    expect((await push(message('text-person.json', 'm-person', '你好'))).status).toBe(200);
    await quiet();
    await until(() => messages.length === 1);
    expect(messages.map((m) => m.messageIds)).toEqual([['m-person']]);
    const trace = (await (await fetch(`${service.url}/v1/trace/m-own`)).json()) as any;
    expect(trace.arrivals.map((a: any) => a.verdict)).toEqual(['looped']);
  });

  it('refuses a wrong verify_token (401), garbage (400) and a body under another key (400), recording nothing', async () => {
    const messages = await start();
    const forged = message('text-person.json', 'm-bad', 'hi');
    forged.d.verify_token = 'forged';
    const refusals: Array<[Buffer, number]> = [
      [kookBody(forged, { encryptKey: KEY }), 401],
      [Buffer.from([0x78, 0x9c, 0xde, 0xad, 0xbe, 0xef]), 400],
      [kookBody({ ...forged, d: { ...forged.d, verify_token: TOKEN } }, { encryptKey: 'another-key' }), 400],
      [kookBody({ ...forged, d: { ...forged.d, verify_token: TOKEN } }), 401],
    ];
    for (const [body, status] of refusals) expect((await post(body)).status).toBe(status);
    await quiet();
    expect(messages).toEqual([]);
    expect(await outbox()).toEqual([]);
    expect(service.intake.metrics.channelStats().kk).toEqual({ rejected: refusals.length });
    expect((await fetch(`${service.url}/v1/trace/m-bad`)).status).toBe(404);
  });
});
