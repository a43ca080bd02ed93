import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { outputOf, type ProcessedMessage } from '../../src/events/output.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

/*
 * A QQ group of five members and two bots of ours: bot A (10001) on a reverse WebSocket, bot B
 * (20002) over signed HTTP. Every group message reaches both bots, each under its own message id.
 * In `mention` mode, only what addresses a bot reaches the agent; the chatter comes with it as
 * context, once per message though both bots delivered it.
 */
const GROUP = 555;
const SECRET = 'secret-b';
const A = 10001;
const B = 20002;

type Segment = { type: string; data: Record<string, string> };
const text = (value: string): Segment => ({ type: 'text', data: { text: value } });
const at = (qq: number): Segment => ({ type: 'at', data: { qq: String(qq) } });
const json = { 'content-type': 'application/json' };
const reply = (id: number): Segment => ({ type: 'reply', data: { id: String(id) } });

/**
 * One bot's copy of a group message: the bot's own message id (each bot numbers messages its own
 * way, B at A's number + 50,000), and so the id its reply segment quotes too.
 */
function groupMessage(selfId: number, id: number, user: number, message: Segment[], time: number) {
  const own = (n: number) => (selfId === A ? n : n + 50_000);
  return {
    time,
    self_id: selfId,
    post_type: 'message',
    message_type: 'group',
    sub_type: 'normal',
    message_id: own(id),
    group_id: GROUP,
    user_id: user,
    sender: { user_id: user, nickname: `member ${user}` },
    message: message.map((segment) =>
      segment.type === 'reply' ? { type: 'reply', data: { id: String(own(Number(segment.data.id))) } } : segment,
    ),
  };
}

describe('a busy group in mention mode', () => {
  let service: Running;
  let socket: WebSocket;
  const clock = new ManualClock();
  afterEach(async () => {
    socket?.close();
    await service?.stop();
  });

  async function start(extra: Record<string, unknown> = {}) {
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        activation: { group: 'mention', wakeWords: ['bot'] },
        access: { deny: ['qq:666'] },
        channels: [
          { id: 'qq-ws', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', namespace: 'qq' },
          { id: 'qq-http', adapter: 'onebot', secret: SECRET, namespace: 'qq' },
        ],
        ...extra,
      },
      { clock },
    );
    socket = new WebSocket(`${service.url.replace('http', 'ws')}/webhooks/qq-ws`, {
      headers: { authorization: 'Bearer tok', 'x-self-id': String(A), 'x-client-role': 'Universal' },
    });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  }

  /** Both bots deliver one member's message; resolves once both copies are recorded. */
  async function say(id: number, user: number, message: Segment[]) {
    const time = 1_718_000_000 + id;
    socket.send(JSON.stringify(groupMessage(A, id, user, message, time)));
    const body = JSON.stringify(groupMessage(B, id, user, message, time));
    const signature = `sha1=${createHmac('sha1', SECRET).update(body).digest('hex')}`;
    expect((await postJson(`${service.url}/webhooks/qq-http`, body, { 'x-signature': signature })).status).toBe(204);
    await until(async () => (await fetch(`${service.url}/v1/trace/${id}`)).status === 200, 10_000);
  }

  /** Past the debounce window: the batch flushes, as context or as an output. */
  async function settle(id: number) {
    await clock.advance(150);
    const trace = async () =>
      (await (await fetch(`${service.url}/v1/trace/${id}`)).json()) as {
        arrivals: Array<{ verdict: string }>;
        outputs: unknown[];
      };
    await until(
      async () => {
        const { outputs, arrivals } = await trace();
        return outputs.length > 0 || arrivals.some((arrival) => arrival.verdict === 'context');
      },
      10_000,
      trace,
    );
  }

  const outputs = async () =>
    (await service.intake.store.outboxAfter(0, 100))
      .map((record) => outputOf(record) as ProcessedMessage)
      .filter((output) => output.type === 'chat.processedMessage');

  it('emits only the batches that @ a bot, reply to its message or start with the wake word, each with the chatter since the last as context', async () => {
    await start();
    await say(1, 1, [text('hello all')]);
    await settle(1);
    await say(2, 2, [text('how are you')]);
    await settle(2);
    await say(3, 666, [text('buy cheap followers')]);
    const denied = (await (await fetch(`${service.url}/v1/trace/3`)).json()) as {
      arrivals: Array<{ verdict: string }>;
    };
    expect(denied.arrivals.map((arrival) => arrival.verdict)).toEqual(['denied']);
    await say(4, 3, [at(B), text(' what is the weather')]);
    await settle(4);

    let out = await outputs();
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ trigger: 'mention', content: 'what is the weather', contextDropped: 0 });
    expect(out[0]!.context.map((message) => [message.sender.id, message.content])).toEqual([
      ['1', 'hello all'],
      ['2', 'how are you'],
    ]);

    await say(5, 4, [text('lol')]);
    await settle(5);
    await say(6, 5, [text('Bot, tell us a joke')]);
    await settle(6);
    // Bot A answers: A reports it sent message 900 (message_sent); B receives it as a group
    // message from A (50900 by B's numbering), which the loop guard drops. A reply to it quotes
    // 900 in A's copy and 50900 in B's: either copy is known to reply to our bot.
    const b = JSON.stringify(groupMessage(B, 900, A, [text('a joke')], 1_718_000_007));
    const signature = `sha1=${createHmac('sha1', SECRET).update(b).digest('hex')}`;
    expect((await postJson(`${service.url}/webhooks/qq-http`, b, { 'x-signature': signature })).status).toBe(204);
    socket.send(
      JSON.stringify({
        time: 1_718_000_007,
        self_id: A,
        post_type: 'message_sent',
        message_type: 'group',
        message_id: 900,
        group_id: GROUP,
        user_id: A,
        message: [text('a joke')],
      }),
    );
    await say(7, 1, [reply(900), text('haha')]);
    await settle(7);
    await say(8, 2, [text('/help')]);
    await settle(8);

    out = await outputs();
    expect(out.map((output) => [output.trigger, output.content])).toEqual([
      ['mention', 'what is the weather'],
      ['wake', 'Bot, tell us a joke'],
      ['reply', 'haha'],
      ['command', '/help'],
    ]);
    expect(out[1]!.context.map((message) => message.content)).toEqual(['lol']);
    expect(out[2]!.context).toEqual([]);
    // Its quote names a message only by id: the bots' memory of what they sent says whose it is.
    expect(out[2]!.quote).toMatchObject({ fromBot: true });
    // The denied sender appears nowhere: not as output, not as context.
    expect(JSON.stringify(out)).not.toContain('cheap followers');
    const stats = Object.values(service.intake.metrics.channelStats()) as Array<Record<string, number>>;
    expect(stats.reduce((sum, channel) => sum + (channel.context ?? 0), 0)).toBe(3);
    expect(stats.reduce((sum, channel) => sum + (channel.denied ?? 0), 0)).toBe(2);
  });

  it('emits every private message', async () => {
    await start();
    socket.send(
      JSON.stringify({
        time: 1_718_000_100,
        self_id: A,
        post_type: 'message',
        message_type: 'private',
        sub_type: 'friend',
        message_id: 100,
        user_id: 7,
        sender: { user_id: 7, nickname: 'pm' },
        message: [text('just chatting')],
      }),
    );
    await until(async () => (await fetch(`${service.url}/v1/trace/100`)).status === 200, 10_000);
    await clock.advance(150);
    await until(async () => (await outputs()).length === 1, 10_000);
    expect((await outputs())[0]).toMatchObject({ trigger: 'always', content: 'just chatting', context: [] });
  });

  it('switches one group at run time, for every later batch, and back', async () => {
    await start();
    const key = encodeURIComponent(`qq:group:${GROUP}`);
    const put = await fetch(`${service.url}/v1/conversations/${key}/activation`, {
      method: 'PUT',
      headers: json,
      body: JSON.stringify({ group: 'always' }),
    });
    expect(put.status).toBe(200);
    await say(10, 1, [text('plain chatter')]);
    await settle(10);
    expect((await outputs()).map((output) => output.trigger)).toEqual(['always']);

    expect(
      (await fetch(`${service.url}/v1/conversations/${key}/activation`, { method: 'DELETE', headers: json })).status,
    ).toBe(200);
    await say(11, 2, [text('more chatter')]);
    await settle(11);
    expect(await outputs()).toHaveLength(1);
    const view = (await (await fetch(`${service.url}/v1/conversations/${key}`)).json()) as Record<string, unknown>;
    expect(view).toMatchObject({ activation: null, context: [{ content: 'more chatter' }], dropped: 0 });

    const bad = await fetch(`${service.url}/v1/conversations/${key}/activation`, {
      method: 'PUT',
      headers: json,
      body: JSON.stringify({ group: 'sometimes' }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('bad_mode');
    const long = await fetch(`${service.url}/v1/conversations/${'k'.repeat(513)}/activation`, {
      method: 'DELETE',
      headers: json,
    });
    expect(((await long.json()) as { error: { code: string } }).error.code).toBe('bad_session_key');
  });
});
