import { createHmac, createPrivateKey, sign } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { outputOf, type Output } from '../../src/events/output.js';
import { fixture } from '../fixtures/index.js';
import { BOT_TOKEN, BOT_USER, fakeGateway } from '../connections/fake-gateway.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

/*
 * Second thoughts end to end (contract §13) on the channels that report recalls and edits besides
 * OneBot and Telegram: Slack's Events API, the Discord Gateway and the QQ bot's webhook, each on
 * the real service with the memory store and a manual clock. What is recalled 300 ms after it
 * was sent never reaches the agent; a recall after emission is told once as chat.retracted; an
 * edit inside the window replaces the text, one after emission is chat.edited.
 */

let service: Running | undefined;
let clock: ManualClock;
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await service?.stop();
  service = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(channel: Record<string, unknown>): Promise<Running> {
  clock = new ManualClock();
  service = await startService(
    { store: 'memory', debounce: { windowMs: 1000, maxWaitMs: 3000 }, channels: [channel] },
    { clock },
  );
  return service;
}

const outputs = async (): Promise<Output[]> =>
  (await service!.intake.store.outboxAfter(0, 100)).map((record) => outputOf(record));
const ofType = async (type: Output['type']) => (await outputs()).filter((output) => output.type === type);
const contents = async () => (await ofType('chat.processedMessage')).map((o) => 'content' in o && o.content);
/** Past the window (60: past the flush scheduler's 50 ms grid, for what is due at once), and the flush done. */
const flushed = async (ms = 1100) => {
  await clock.advance(ms);
  await service!.intake.settle();
};

describe('Slack (Events API): second thoughts', () => {
  const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
  let events = 0;
  /** An Events API delivery of `event`, signed as Slack signs it, stamped with the service's clock. */
  const post = async (
    event: Record<string, unknown>,
    headers: Record<string, string> = {},
    eventId = `Ev${++events}`,
  ) => {
    const body = JSON.stringify({
      token: 'x',
      team_id: 'T1',
      api_app_id: 'A1',
      type: 'event_callback',
      event_id: eventId,
      event_time: 1_700_000_000,
      authorizations: [{ team_id: 'T1', user_id: 'UBOT', is_bot: true }],
      event,
    });
    const timestamp = String(Math.floor(clock.now() / 1000));
    const signature = `v0=${createHmac('sha256', SECRET).update(`v0:${timestamp}:${body}`).digest('hex')}`;
    const answer = await postJson(`${service!.url}/webhooks/slack`, body, {
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': signature,
      ...headers,
    });
    expect(answer.status).toBe(200);
    return eventId;
  };
  const ts = (n: number) => `1700000000.00010${n}`;
  const message = (n: number, text: string) => ({
    type: 'message',
    channel: 'C1',
    channel_type: 'channel',
    user: 'U1',
    text,
    ts: ts(n),
    client_msg_id: `client-${n}`,
  });
  /**
   * message_deleted (docs.slack.dev/reference/events/message/message_deleted), its own ts after
   * the message's; with no `text`, no previous_message (the event does not always carry one).
   */
  const deleted = (n: number, text?: string) => ({
    type: 'message',
    subtype: 'message_deleted',
    hidden: true,
    channel: 'C1',
    channel_type: 'channel',
    ts: `1700000100.00020${n}`,
    deleted_ts: ts(n),
    event_ts: `1700000100.00020${n}`,
    ...(text === undefined ? {} : { previous_message: { type: 'message', user: 'U1', text, ts: ts(n) } }),
  });
  /** message_changed (docs.slack.dev/reference/events/message/message_changed), marked edited by its sender. */
  const changed = (n: number, at: number, before: string, text: string) => ({
    type: 'message',
    subtype: 'message_changed',
    hidden: true,
    channel: 'C1',
    channel_type: 'channel',
    ts: `1700000200.00030${at}`,
    event_ts: `1700000200.00030${at}`,
    message: { type: 'message', user: 'U1', text, ts: ts(n), edited: { user: 'U1', ts: `1700000200.00000${at}` } },
    previous_message: { type: 'message', user: 'U1', text: before, ts: ts(n) },
  });
  const begin = () => start({ id: 'slack', adapter: 'slack', signingSecret: SECRET, botToken: 'xoxb-test' });

  it('never emits a message deleted 300 ms after it was sent; a later message comes out alone', async () => {
    await begin();
    await post(message(1, 'wrong channel, sorry'));
    await clock.advance(300);
    await post(deleted(1, 'wrong channel, sorry'));
    await flushed(2000);
    expect(await outputs()).toEqual([]);
    await post(message(2, 'hello'));
    await flushed();
    expect(await contents()).toEqual(['hello']);
  });

  // A deletion naming no sender finds the message's buffer by the sender this process saw send it.
  it('never emits a message deleted inside its window whose deletion carries no previous_message', async () => {
    await begin();
    await post(message(1, 'wrong channel, sorry'));
    await clock.advance(300);
    await post(deleted(1));
    await flushed(2000);
    expect(await outputs()).toEqual([]);
  });

  it('tells a deletion after emission once, though Slack retries it, naming the output and the message', async () => {
    await begin();
    await post(message(1, 'a secret'));
    await flushed();
    const [sent] = await ofType('chat.processedMessage');
    expect(sent).toBeDefined();
    const eventId = await post(deleted(1, 'a secret'));
    await post(deleted(1, 'a secret'), { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' }, eventId);
    await flushed(60);
    expect(await ofType('chat.retracted')).toEqual([
      expect.objectContaining({
        outputId: sent!.id,
        messageId: `C1:${ts(1)}`,
        sessionKey: 'slack:group:C1',
        channel: 'slack',
      }),
    ]);
    expect(await ofType('chat.notice')).toEqual([]);
  });

  it('replaces the text of a message edited inside its window; an edit after emission is chat.edited', async () => {
    await begin();
    await post(message(1, 'deploy nwo'));
    await clock.advance(300);
    await post(changed(1, 1, 'deploy nwo', 'deploy now'));
    await flushed();
    const [sent] = await ofType('chat.processedMessage');
    expect(sent).toMatchObject({ content: 'deploy now', merged: 1 });
    await post(changed(1, 2, 'deploy now', 'deploy now, please'));
    await flushed(60);
    expect(await ofType('chat.edited')).toEqual([
      expect.objectContaining({ outputId: sent!.id, messageId: `C1:${ts(1)}`, content: 'deploy now, please' }),
    ]);
    expect(await contents()).toEqual(['deploy now']);
  });
});

describe('Discord (Gateway): second thoughts', () => {
  const CHANNEL = '1170000000000000001';
  const GUILD = '1160000000000000001';
  const ANA = { id: '1150000000000000001', username: 'ana' };
  let gateway: Awaited<ReturnType<typeof fakeGateway>>;
  const stats = () => service!.intake.metrics.channelStats().dc ?? {};

  const begin = async () => {
    gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    await start({ id: 'dc', adapter: 'discord', botToken: BOT_TOKEN, gatewayUrl: gateway.url });
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
  };
  /** Ana's message, once admitted. */
  const say = async (id: string, content: string) => {
    const before = stats().received ?? 0;
    gateway.dispatch({ id, content });
    await until(() => (stats().received ?? 0) === before + 1);
  };
  /**
   * A dispatch, once handled: frames of a socket are handled in turn, so a message of our own bot
   * sent after it (counted as looped, never emitted) says when it was.
   */
  const send = async (t: string, d: Record<string, unknown>) => {
    gateway.op({ op: 0, s: null, t, d });
    const before = stats().looped ?? 0;
    gateway.dispatch({
      id: `mine-${before}`,
      content: 'our own',
      author: { id: BOT_USER, username: 'intake', bot: true },
    });
    await until(() => (stats().looped ?? 0) === before + 1);
  };
  const deleted = (id: string) => send('MESSAGE_DELETE', { id, channel_id: CHANNEL, guild_id: GUILD });
  /** MESSAGE_UPDATE as the current API sends it: the whole message, with its new edited_timestamp. */
  const updated = (id: string, content: string, editedAt: string) =>
    send('MESSAGE_UPDATE', {
      id,
      channel_id: CHANNEL,
      guild_id: GUILD,
      author: ANA,
      content,
      timestamp: '2026-12-04T03:30:00.000000+00:00',
      edited_timestamp: editedAt,
      mentions: [],
      attachments: [],
      embeds: [],
    });

  // MESSAGE_DELETE names no author: its message's buffer is found by the sender seen sending it.
  it('never emits a message deleted 300 ms after it was sent; a later message comes out alone', async () => {
    await begin();
    await say('1', 'wrong channel, sorry');
    await clock.advance(300);
    await deleted('1');
    await flushed(2000);
    expect(await outputs()).toEqual([]);
    await say('2', 'hello');
    await flushed();
    expect(await contents()).toEqual(['hello']);
  });

  it('tells a deletion after emission once, naming the output and the message', async () => {
    await begin();
    await say('1', 'a secret');
    await flushed();
    const [sent] = await ofType('chat.processedMessage');
    expect(sent).toBeDefined();
    await deleted('1');
    await flushed(60);
    expect(await ofType('chat.retracted')).toEqual([
      expect.objectContaining({
        outputId: sent!.id,
        messageId: '1',
        sessionKey: `discord:group:${CHANNEL}`,
        channel: 'dc',
      }),
    ]);
    expect(await ofType('chat.notice')).toEqual([]);
  });

  it('replaces the text of a message edited inside its window; an edit after emission is chat.edited', async () => {
    await begin();
    await say('1', 'status of ORD-12');
    await clock.advance(300);
    await updated('1', 'status of ORD-124?', '2026-12-04T03:30:01.000000+00:00');
    await flushed();
    const [sent] = await ofType('chat.processedMessage');
    expect(sent).toMatchObject({ content: 'status of ORD-124?', merged: 1 });
    await updated('1', 'status of ORD-125?', '2026-12-04T03:31:00.000000+00:00');
    await flushed(60);
    expect(await ofType('chat.edited')).toEqual([
      expect.objectContaining({ outputId: sent!.id, messageId: '1', content: 'status of ORD-125?' }),
    ]);
    expect(await contents()).toEqual(['status of ORD-124?']);
  });
});

describe('QQ bot (webhook): second thoughts', () => {
  // The op 13 vector's secret (test/adapters/qqbot/qqbot.e2e.test.ts).
  const SECRET = 'DG5g3B4j9X2KOErG';
  const APP_ID = '102000001';
  const guildAt = fixture('qqbot', 'guild-at.json').d;
  const OUR_BOT = '11621184437953393940';

  /** Sign as QQ does: Ed25519 over timestamp + body, by the key seeded from the secret. */
  const qqSign = (timestamp: string, body: string): string => {
    let seed = SECRET;
    while (seed.length < 32) seed = seed + seed;
    const key = createPrivateKey({
      key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seed.slice(0, 32))]),
      format: 'der',
      type: 'pkcs8',
    });
    return sign(null, Buffer.from(timestamp + body), key).toString('hex');
  };
  const post = async (payload: unknown) => {
    const body = JSON.stringify(payload);
    const timestamp = String(Math.floor(clock.now() / 1000));
    const answer = await postJson(`${service!.url}/webhooks/qq`, body, {
      'user-agent': 'QQBot-Callback',
      'x-bot-appid': APP_ID,
      'x-signature-method': 'Ed25519',
      'x-signature-timestamp': timestamp,
      'x-signature-ed25519': qqSign(timestamp, body),
    });
    expect(answer).toMatchObject({ status: 200, body: { op: 12, d: 0 } });
  };
  const messageId = (n: number) => `08e092eeb983afef9e011080d80b38a4a9b4ea0548e3a3c5f10${n}`;
  /** An @ of our bot in guild channel 100010 (guild-at.json, without its image). */
  const say = (n: number, text: string) =>
    post({
      op: 0,
      id: `AT_MESSAGE_CREATE:message-${n}`,
      s: n,
      t: 'AT_MESSAGE_CREATE',
      d: {
        ...guildAt,
        id: messageId(n),
        content: `<@!${OUR_BOT}> ${text}`,
        attachments: [],
        mentions: [guildAt.mentions[0]],
      },
    });
  /** A guild deletion `{message, op_user}` (bot.q.qq.com/wiki event-emit.md); QQ pushes one event more than once. */
  const deleted = (type: string, n: number, push = 1) =>
    post({
      op: 0,
      id: `${type}:deletion-${n}-push-${push}`,
      s: 100 + n,
      t: type,
      d: {
        message: {
          id: messageId(n),
          channel_id: guildAt.channel_id,
          guild_id: guildAt.guild_id,
          author: guildAt.author,
        },
        op_user: { id: guildAt.author.id },
      },
    });
  const begin = () => start({ id: 'qq', adapter: 'qqbot', appId: APP_ID, secret: SECRET });

  it('never emits a message deleted 300 ms after it was sent; a later message comes out alone', async () => {
    await begin();
    await say(1, '发错频道了');
    await clock.advance(300);
    await deleted('PUBLIC_MESSAGE_DELETE', 1);
    await flushed(2000);
    expect(await outputs()).toEqual([]);
    await say(2, '今天谁值班');
    await flushed();
    expect(await contents()).toEqual(['今天谁值班']);
  });

  it('tells a deletion after emission once, though QQ pushes it twice, naming the output and the message', async () => {
    await begin();
    await say(1, '密码是 1234');
    await flushed();
    const [sent] = await ofType('chat.processedMessage');
    expect(sent).toBeDefined();
    await deleted('MESSAGE_DELETE', 1, 1);
    await deleted('MESSAGE_DELETE', 1, 2);
    await flushed(60);
    expect(await ofType('chat.retracted')).toEqual([
      expect.objectContaining({
        outputId: sent!.id,
        messageId: messageId(1),
        sessionKey: `qqbot:channel:${guildAt.channel_id}`,
        channel: 'qq',
      }),
    ]);
    expect(await ofType('chat.notice')).toEqual([]);
  });
});
