import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BOT_FRAMEWORK_ISSUER } from '../../../src/adapters/teams/descriptor.js';
import type { ProcessedEvent, ProcessedMessage } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { startKeyServer, unsignedToken, type KeyServer } from '../../support/jwks.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';

const APP = '00000000-0000-4000-8000-00000000b071';
const BOT = `28:${APP}`;
const TENANT = '72f988bf-0000-4000-8000-000000000001';
const SERVICE = 'https://smba.trafficmanager.net/emea/';

describe('a Teams (Bot Framework) channel on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let keys: KeyServer;
  beforeAll(async () => {
    keys = await startKeyServer({ endorsements: ['msteams'] });
  });
  afterAll(() => keys.close());
  afterEach(async () => service?.stop());

  const start = async () => {
    clock = new ManualClock();
    service = await startService(
      {
        store: 'memory',
        debounce: { windowMs: 100, maxWaitMs: 400 },
        correlation: { noticeHoldMs: 50 },
        channels: [{ id: 'tm', adapter: 'teams', appId: APP, tenantId: TENANT, openIdMetadataUrl: keys.metadataUrl }],
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
  const token = (options: { issuer?: string; audience?: string; ttlS?: number; serviceUrl?: string } = {}) =>
    keys.sign(
      { serviceUrl: options.serviceUrl ?? SERVICE },
      { issuer: BOT_FRAMEWORK_ISSUER, audience: APP, now: clock.now(), ...options },
    );
  const post = async (body: unknown, authorization?: string) =>
    postJson(`${service.url}/webhooks/tm`, body, authorization ? { authorization } : {});
  const send = async (body: unknown) => post(body, `Bearer ${await token()}`);
  const quiet = () => clock.advance(500);
  const outbox = () => service.intake.store.outboxAfter(0, 10);
  /** The personal-chat fixture as activity `id` with this text, sent now. */
  const personal = (id: string, text: string) => ({
    ...(fixture('teams', 'message-personal.json') as any),
    id,
    text,
    timestamp: new Date(clock.now()).toISOString(),
  });

  it('merges three fragments of a personal chat, answers 200 and takes a retry once; the reply handle and the trace name the channel', async () => {
    const { messages } = await start();
    const fetched = () => [keys.server.hits.get('/openidconfiguration') ?? 0, keys.server.hits.get('/keys') ?? 0];
    const before = fetched();
    for (const [id, text] of [
      ['1001', 'my order'],
      ['1002', 'ORD-123'],
      ['1003', 'never arrived'],
    ])
      expect(await send(personal(id!, text!))).toMatchObject({ status: 200, body: {} });
    expect(await send(personal('1001', 'my order'))).toMatchObject({ status: 200, body: {} });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'teams:a:1personal-ada',
      content: 'my order ORD-123 never arrived',
      merged: 3,
      messageIds: ['1001', '1002', '1003'],
      sourceChannel: 'teams',
      channel: 'tm',
      sender: { id: '29:1ada-lovelace', name: 'Ada Lovelace' },
      replyBot: { channel: 'tm', botId: BOT },
      reply: { params: { serviceUrl: SERVICE, conversationId: 'a:1personal-ada', activityId: '1003' } },
    });
    await quiet();
    expect(await outbox()).toHaveLength(1);
    const trace = (await (await fetch(`${service.url}/v1/trace/1001`)).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.id, a.channel, a.verdict])).toEqual([
      ['1001', 'tm', 'accepted'],
      ['1002', 'tm', 'accepted'],
      ['1003', 'tm', 'accepted'],
      ['1001', 'tm', 'duplicate'],
    ]);
    // The metadata once, its keys once (a new service): both kept for the next deliveries.
    expect(fetched()).toEqual([before[0]! + 1, before[1]! + 1]);
  });

  it("puts a channel message in the group session without the bot's <at> mention, the bot mentioned, and a team join as a notice", async () => {
    const { messages, notices } = await start();
    expect(await send(fixture('teams', 'message-channel.json'))).toMatchObject({ status: 200, body: {} });
    expect(await send(fixture('teams', 'conversation-update.json'))).toMatchObject({ status: 200, body: {} });
    await quiet();
    await until(() => messages.length === 1 && notices.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'teams:group:19:support@thread.tacv2;messageid=1718000000000',
      content: 'can @Bob Smith check order 42?',
      mentionedBots: [{ channel: 'tm', botId: BOT }],
      media: [],
    });
    expect(notices[0]).toMatchObject({
      sessionKey: 'teams:group:19:support@thread.tacv2',
      detail: 'conversationUpdate',
    });
  });

  it('turns a soft delete and an edit of emitted messages into chat.retracted and chat.edited, and drops a message deleted before its flush', async () => {
    const { messages } = await start();
    const second: Array<{ type: string; messageId: string; content?: string }> = [];
    for (const type of ['chat.retracted', 'chat.edited'] as const)
      service.intake.on(type, (output) => {
        second.push(output);
      });
    const revise = (type: 'messageUpdate' | 'messageDelete', id: string, text?: string) => ({
      ...personal(id, text ?? ''),
      type,
      channelData: {
        tenant: { id: TENANT },
        eventType: type === 'messageUpdate' ? 'editMessage' : 'softDeleteMessage',
      },
    });
    expect((await send(personal('3001', 'cancel order 7'))).status).toBe(200);
    expect((await send(revise('messageDelete', '3001'))).status).toBe(200);
    await quiet();
    expect(messages).toEqual([]);
    expect((await send(personal('3002', 'ship to Paris'))).status).toBe(200);
    expect((await send(personal('3003', 'please hurry'))).status).toBe(200);
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({ messageIds: ['3002', '3003'], content: 'ship to Paris please hurry' });
    await clock.advance(1000);
    expect((await send(revise('messageUpdate', '3002', 'ship to Lyon'))).status).toBe(200);
    expect((await send(revise('messageDelete', '3003'))).status).toBe(200);
    await quiet();
    await until(() => second.length === 2);
    expect(second).toMatchObject([
      { type: 'chat.edited', messageId: '3002', content: 'ship to Lyon', outputId: messages[0]!.id },
      { type: 'chat.retracted', messageId: '3003', outputId: messages[0]!.id },
    ]);
    expect(messages).toHaveLength(1);
  });

  it('answers 503 while the OpenID metadata cannot be fetched, recording nothing, and takes the retry once it can', async () => {
    const { messages } = await start();
    const fetched = keys.server.hits.get('/openidconfiguration') ?? 0;
    keys.metadataDown = true;
    try {
      const refused = await send(personal('4001', 'hello'));
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/Bot Framework signing keys of channel "tm" cannot be fetched/),
      });
      expect(refused.headers.get('retry-after')).toBe('30');
    } finally {
      keys.metadataDown = false;
    }
    expect(await send(personal('4001', 'hello'))).toMatchObject({ status: 200, body: {} });
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({ messageIds: ['4001'], content: 'hello' });
    expect(keys.server.hits.get('/openidconfiguration')).toBe(fetched + 2);
  });

  it('refuses missing, unsigned, expired, foreign, unknown-key and other-endpoint tokens, other tenants, and channels the key does not endorse, recording nothing', async () => {
    await start();
    const body = personal('bad-1', 'let me in');
    const stranger = await keys.stranger();
    const now = clock.now();
    const refusals: Array<[string | undefined, unknown, string, RegExp]> = [
      [undefined, body, 'bad_signature', /Authorization: Bearer <JWT> header from Bot Framework is required/],
      [
        `Bearer ${unsignedToken({ iss: BOT_FRAMEWORK_ISSUER, aud: APP, exp: now / 1000 + 60, serviceUrl: SERVICE })}`,
        body,
        'bad_signature',
        /not signed with RS256/,
      ],
      [`Bearer ${await token({ ttlS: -301 })}`, body, 'stale_timestamp', /the Bot Framework token expired/],
      [`Bearer ${await token({ audience: 'another-bot' })}`, body, 'bad_signature', /another audience/],
      [
        `Bearer ${await token({ issuer: 'https://sts.windows.net/x/' })}`,
        body,
        'bad_signature',
        /issued by someone else/,
      ],
      [
        `Bearer ${await keys.sign({ serviceUrl: SERVICE }, { issuer: BOT_FRAMEWORK_ISSUER, audience: APP, now, kid: 'key-9', key: stranger })}`,
        body,
        'bad_signature',
        /key \(kid\) that is not among the platform's keys/,
      ],
      [
        `Bearer ${await token({ serviceUrl: 'https://attacker.example/' })}`,
        body,
        'bad_signature',
        /serviceUrl claim is not the activity's serviceUrl/,
      ],
      [
        `Bearer ${await token()}`,
        {
          ...body,
          channelData: { tenant: { id: 'other-tenant' } },
          conversation: { ...body.conversation, tenantId: 'other-tenant' },
        },
        'bad_signature',
        /from tenant "other-tenant"/,
      ],
      [
        `Bearer ${await token()}`,
        { ...body, channelId: 'webchat' },
        'bad_signature',
        /does not endorse the activity's channelId "webchat"/,
      ],
    ];
    for (const [authorization, activity, code, message] of refusals) {
      const answer = await post(activity, authorization);
      expect(answer.status, authorization).toBe(401);
      expect(answer.body.error, authorization).toMatchObject({ code, message: expect.stringMatching(message) });
    }
    await quiet();
    expect(await outbox()).toEqual([]);
    expect(service.intake.metrics.channelStats().tm).toEqual({ rejected: refusals.length });
    expect((await fetch(`${service.url}/v1/trace/bad-1`)).status).toBe(404);
  });
});
