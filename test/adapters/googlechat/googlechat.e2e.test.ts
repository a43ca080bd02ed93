import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GOOGLE_CHAT_ISSUER } from '../../../src/adapters/googlechat/descriptor.js';
import type { ProcessedEvent, ProcessedMessage } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { startKeyServer, unsignedToken, type KeyServer } from '../../support/jwks.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

const AUDIENCE = '1234567890';

describe('a Google Chat channel on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let keys: KeyServer;
  let files: TestServer;
  beforeAll(async () => {
    keys = await startKeyServer();
    files = await serve((req, res) => {
      if (req.url === '/download/chart.png') {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  afterAll(async () => {
    await keys.close();
    await files.close();
  });
  afterEach(async () => service?.stop());

  const start = async () => {
    clock = new ManualClock();
    service = await startService(
      {
        store: 'memory',
        debounce: { windowMs: 100, maxWaitMs: 400 },
        correlation: { noticeHoldMs: 50 },
        media: { allowHosts: [`127.0.0.1:${files.port}`], retries: 0 },
        channels: [{ id: 'gc', adapter: 'googlechat', audience: AUDIENCE, jwksUrl: keys.jwksUrl }],
      },
      { clock },
    );
    const messages: ProcessedMessage[] = [];
    const notices: ProcessedEvent[] = [];
    service.intake.on('chat.processedMessage', (m) => {
      messages.push(m);
    });
    service.intake.on('chat.notice', (n) => {
      notices.push(n);
    });
    return { messages, notices };
  };
  const token = (options: { issuer?: string; audience?: string; ttlS?: number } = {}) =>
    keys.sign({}, { issuer: GOOGLE_CHAT_ISSUER, audience: AUDIENCE, now: clock.now(), ...options });
  const post = async (body: unknown, authorization?: string) =>
    postJson(`${service.url}/webhooks/gc`, body, authorization ? { authorization } : {});
  const send = async (body: unknown) => post(body, `Bearer ${await token()}`);
  const quiet = () => clock.advance(500);
  const outbox = () => service.intake.store.outboxAfter(0, 10);
  /** The DM fixture as message `id` with this text, created now. */
  const dm = (id: string, text: string) => {
    const event = fixture('googlechat', 'message-dm.json') as any;
    event.message = {
      ...event.message,
      name: `spaces/BBBBdm/messages/${id}`,
      text,
      createTime: new Date(clock.now()).toISOString(),
    };
    return event;
  };

  it('merges three fragments of a DM into one message, answers {} and takes a retry once; the trace names the channel', async () => {
    const { messages } = await start();
    const fetched = keys.server.hits.get('/keys') ?? 0;
    for (const [id, text] of [
      ['a.a', 'my order'],
      ['b.b', 'ORD-123'],
      ['c.c', 'never arrived'],
    ])
      expect(await send(dm(id!, text!))).toMatchObject({ status: 200, body: {} });
    // Chat sends the same event again when our answer was lost: the same message name.
    expect(await send(dm('a.a', 'my order'))).toMatchObject({ status: 200, body: {} });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'googlechat:spaces/BBBBdm',
      content: 'my order ORD-123 never arrived',
      merged: 3,
      messageIds: ['spaces/BBBBdm/messages/a.a', 'spaces/BBBBdm/messages/b.b', 'spaces/BBBBdm/messages/c.c'],
      sourceChannel: 'googlechat',
      channel: 'gc',
      sender: { id: 'users/111', name: 'Ada Lovelace' },
      reply: { params: { parent: 'spaces/BBBBdm', thread: 'spaces/BBBBdm/threads/t2' } },
    });
    await quiet();
    expect(await outbox()).toHaveLength(1);
    const trace = (await (
      await fetch(`${service.url}/v1/trace/${encodeURIComponent('spaces/BBBBdm/messages/a.a')}`)
    ).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.id, a.channel, a.verdict])).toEqual([
      ['spaces/BBBBdm/messages/a.a', 'gc', 'accepted'],
      ['spaces/BBBBdm/messages/b.b', 'gc', 'accepted'],
      ['spaces/BBBBdm/messages/c.c', 'gc', 'accepted'],
      ['spaces/BBBBdm/messages/a.a', 'gc', 'duplicate'],
    ]);
    // The keys fetched once by this service, and kept.
    expect(keys.server.hits.get('/keys')).toBe(fetched + 1);
  });

  it("puts a space message in the group session without the app's own mention, downloads its attachment, and makes joining a notice", async () => {
    const { messages, notices } = await start();
    const event = fixture('googlechat', 'message-space.json') as any;
    event.message.attachment = [
      {
        name: 'spaces/AAAAroom/messages/m1.m1/attachments/a1',
        contentName: 'chart.png',
        contentType: 'image/png',
        downloadUri: `http://127.0.0.1:${files.port}/download/chart.png`,
        source: 'UPLOADED_CONTENT',
      },
    ];
    expect(await send(event)).toMatchObject({ status: 200, body: {} });
    expect(await send(fixture('googlechat', 'added.json'))).toMatchObject({ status: 200, body: {} });
    await quiet();
    await until(() => messages.length === 1 && notices.length === 1);
    const [message] = messages;
    expect(message).toMatchObject({
      sessionKey: 'googlechat:group:spaces/AAAAroom',
      content: 'can you check order 42 with @Bob',
      conversation: { type: 'group', id: 'spaces/AAAAroom' },
    });
    expect(message!.mediaErrors).toEqual([]);
    expect(message!.media).toMatchObject([{ type: 'image', mime: 'image/png', bytes: PNG.length }]);
    const stored = join(service.dir, message!.media[0]!.path);
    expect(existsSync(stored) && readFileSync(stored).equals(PNG)).toBe(true);
    expect(notices[0]).toMatchObject({ sessionKey: 'googlechat:group:spaces/AAAAroom', detail: 'ADDED_TO_SPACE' });
  });

  it('refuses missing, unsigned, expired, foreign and unknown-key tokens with 401, recording nothing', async () => {
    await start();
    const body = dm('bad', 'let me in');
    const stranger = await keys.stranger();
    const now = clock.now();
    const refusals: Array<[string | undefined, string, RegExp]> = [
      [undefined, 'bad_signature', /Authorization: Bearer <JWT> header from Google Chat is required/],
      ['Basic Zm9vOmJhcg==', 'bad_signature', /is required/],
      [
        `Bearer ${unsignedToken({ iss: GOOGLE_CHAT_ISSUER, aud: AUDIENCE, exp: now / 1000 + 60 })}`,
        'bad_signature',
        /not signed with RS256/,
      ],
      [`Bearer ${await token({ ttlS: -301 })}`, 'stale_timestamp', /the Google Chat token expired/],
      [`Bearer ${await token({ audience: 'another-project' })}`, 'bad_signature', /another audience/],
      [
        `Bearer ${await token({ issuer: 'someone@example.iam.gserviceaccount.com' })}`,
        'bad_signature',
        /issued by someone else/,
      ],
      [
        `Bearer ${await keys.sign({}, { issuer: GOOGLE_CHAT_ISSUER, audience: AUDIENCE, now, kid: 'key-9', key: stranger })}`,
        'bad_signature',
        /key \(kid\) that is not among the platform's keys/,
      ],
      [
        `Bearer ${await keys.sign({}, { issuer: GOOGLE_CHAT_ISSUER, audience: AUDIENCE, now, key: stranger })}`,
        'bad_signature',
        /signature does not verify/,
      ],
    ];
    for (const [authorization, code, message] of refusals) {
      const answer = await post(body, authorization);
      expect(answer.status, authorization).toBe(401);
      expect(answer.body.error, authorization).toMatchObject({ code, message: expect.stringMatching(message) });
    }
    // Bad bytes with a good token: a 400, after the token passed.
    expect((await post('{"type": ', `Bearer ${await token()}`)).status).toBe(400);
    await quiet();
    expect(await outbox()).toEqual([]);
    expect(service.intake.metrics.channelStats().gc).toEqual({ rejected: refusals.length + 1 });
    expect((await fetch(`${service.url}/v1/trace/${encodeURIComponent('spaces/BBBBdm/messages/bad')}`)).status).toBe(
      404,
    );
  });
});
