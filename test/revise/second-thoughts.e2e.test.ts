import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { outputOf, type Output } from '../../src/events/output.js';
import { postJson, startService, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

/*
 * Second thoughts end to end (contract §13), on the memory and SQLite stores: a QQ group with two bots of
 * ours (A and B, one OneBot HTTP channel; B numbers messages at A's number + 50,000), and a
 * Telegram chat. What is recalled before it is emitted never reaches the agent; what is recalled
 * or edited after is told once; a person answering from the bot's own account holds the agent.
 */
const GROUP = 555;
const A = 10001;
const B = 20002;
const TG = { 'x-telegram-bot-api-secret-token': 'tg_secret-1' };

function groupMessage(selfId: number, id: number, user: number, text: string) {
  return {
    time: 1_718_000_000 + id,
    self_id: selfId,
    post_type: 'message',
    message_type: 'group',
    sub_type: 'normal',
    message_id: selfId === A ? id : id + 50_000,
    group_id: GROUP,
    user_id: user,
    sender: { user_id: user, nickname: `member ${user}` },
    message: [{ type: 'text', data: { text } }],
  };
}

function recall(selfId: number, id: number, user: number) {
  return {
    time: 1_718_000_100 + id,
    self_id: selfId,
    post_type: 'notice',
    notice_type: 'group_recall',
    group_id: GROUP,
    user_id: user,
    operator_id: user,
    message_id: selfId === A ? id : id + 50_000,
  };
}

function telegram(updateId: number, messageId: number, text: string, edit?: number) {
  const message = {
    message_id: messageId,
    from: { id: 111, first_name: 'Ana' },
    chat: { id: 111, type: 'private' },
    date: 1_718_000_000,
    text,
    ...(edit === undefined ? {} : { edit_date: edit }),
  };
  return { update_id: updateId, ...(edit === undefined ? { message } : { edited_message: message }) };
}

// The memory store, and SQLite (startService's default: a file of the test's own).
describe.each([
  ['memory', { store: 'memory' }],
  ['SQLite', {}],
])('second thoughts on %s', (_name, storeConfig) => {
  let service: Running;
  let clock: ManualClock;
  afterEach(async () => {
    await service?.stop();
  });

  async function start(extra: Record<string, unknown> = {}) {
    clock = new ManualClock();
    service = await startService(
      {
        ...storeConfig,
        debounce: { windowMs: 1000, maxWaitMs: 3000 },
        takeover: { holdMs: 5000, maxMs: 20_000 },
        channels: [
          { id: 'qq', adapter: 'onebot', namespace: 'qq', verify: false },
          {
            id: 'tg',
            adapter: 'telegram',
            secretToken: 'tg_secret-1',
            botToken: '123456:ABC',
            apiBaseUrl: 'http://127.0.0.1:9',
          },
        ],
        ...extra,
      },
      { clock },
    );
  }

  const post = async (body: unknown, channel = 'qq', headers: Record<string, string> = {}) => {
    const answer = await postJson(`${service.url}/webhooks/${channel}`, body, headers);
    expect(answer.status).toBeLessThan(300);
  };
  /** Both bots deliver a member's message. */
  const say = async (id: number, user: number, text: string) => {
    await post(groupMessage(A, id, user, text));
    await post(groupMessage(B, id, user, text));
  };
  const outputs = async (): Promise<Output[]> =>
    (await service.intake.store.outboxAfter(0, 100)).map((record) => outputOf(record));
  const ofType = async (type: Output['type']) => (await outputs()).filter((output) => output.type === type);
  /** Past the window (60: past the flush scheduler's grid, for what is due at once), and the flush done. */
  const flushed = async (ms = 1100) => {
    await clock.advance(ms);
    await service.intake.settle();
  };

  it('never emits a message recalled 300 ms after it was sent, however many bots report the recall', async () => {
    await start();
    await say(1, 7, 'oops, wrong group');
    await clock.advance(300);
    await post(recall(A, 1, 7));
    await post(recall(B, 1, 7));
    await flushed(2000);
    expect(await outputs()).toEqual([]);
    const trace = (await (await fetch(`${service.url}/v1/trace/${A}:1`)).json()) as {
      arrivals: Array<{ verdict: string }>;
    };
    expect(trace.arrivals.map((arrival) => arrival.verdict)).toContain('retracted');
    // A later message of the sender is emitted alone
    await say(2, 7, 'hello');
    await flushed();
    expect((await ofType('chat.processedMessage')).map((o) => 'content' in o && o.content)).toEqual(['hello']);
  });

  it('tells a recall after emission once, though both bots report it, naming the output and the message', async () => {
    await start();
    await say(1, 7, 'a secret');
    await flushed();
    const [message] = await ofType('chat.processedMessage');
    expect(message).toBeDefined();
    await post(recall(B, 1, 7));
    await post(recall(A, 1, 7));
    await flushed(60);
    const retracted = await ofType('chat.retracted');
    expect(retracted).toHaveLength(1);
    expect(retracted[0]).toMatchObject({
      type: 'chat.retracted',
      outputId: message!.id,
      messageId: `${A}:1`,
      sessionKey: `qq:group:${GROUP}`,
      channel: 'qq',
    });
    expect(await ofType('chat.notice')).toEqual([]);
  });

  it('remembers a recall that comes before its message: the message never comes out', async () => {
    await start();
    await post(recall(A, 3, 7));
    await flushed(); // a notice of a group where several bots deliver waits for their copies
    // the recall of a message not known is a notice, as before
    expect((await ofType('chat.notice')).map((o) => 'detail' in o && o.detail)).toEqual(['group_recall']);
    await say(3, 7, 'late copy');
    await flushed();
    expect(await ofType('chat.processedMessage')).toEqual([]);
  });

  it('replaces the text of a Telegram message edited inside its window; an edit after emission is chat.edited', async () => {
    await start();
    await post(telegram(1, 500, 'helo'), 'tg', TG);
    await clock.advance(300);
    await post(telegram(2, 500, 'hello', 1_718_000_001), 'tg', TG);
    await flushed();
    const [message] = await ofType('chat.processedMessage');
    expect(message).toMatchObject({ content: 'hello', merged: 1 });
    await post(telegram(3, 500, 'hello there', 1_718_000_002), 'tg', TG);
    await flushed(60);
    const edited = await ofType('chat.edited');
    expect(edited).toHaveLength(1);
    expect(edited[0]).toMatchObject({ outputId: message!.id, messageId: '123456:111:500', content: 'hello there' });
    // an edit of a message not known here is a message, as before
    await post(telegram(4, 999, 'never seen', 1_718_000_003), 'tg', TG);
    await flushed();
    expect((await ofType('chat.processedMessage')).map((o) => 'content' in o && o.content)).toEqual([
      'hello',
      '(edited) never seen',
    ]);
  });

  it('changes nothing for an edit after the recall', async () => {
    await start();
    await post(telegram(1, 600, 'first'), 'tg', TG);
    await flushed();
    expect(await ofType('chat.processedMessage')).toHaveLength(1);
    // Telegram reports no deletions to bots: a OneBot pair shows the same rule
    await say(5, 7, 'to be recalled');
    await post(recall(A, 5, 7));
    await post({ ...groupMessage(A, 5, 7, 'edited?'), post_type: 'message' });
    await flushed();
    expect((await ofType('chat.processedMessage')).map((o) => 'content' in o && o.content)).toEqual(['first']);
  });

  it('holds the agent while the owner answers from the bot account, with chat.takeover at its start and its end', async () => {
    // The agent answers through the intake (an action through bot A's HTTP API, a fake NapCat):
    // what A reports sending besides is the owner's.
    const napcat = createServer((request, response) => {
      request.resume();
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ status: 'ok', retcode: 0, data: { message_id: 901 } }));
    });
    await new Promise<void>((resolve) => napcat.listen(0, '127.0.0.1', resolve));
    const apiUrl = `http://127.0.0.1:${(napcat.address() as AddressInfo).port}`;
    try {
      await start({
        channels: [{ id: 'qq', adapter: 'onebot', namespace: 'qq', verify: false, apiUrl, botIds: [String(A)] }],
      });
      const sent = (id: number, text: string) => ({
        time: 1_718_000_050,
        self_id: A,
        post_type: 'message_sent',
        message_type: 'group',
        message_id: id,
        group_id: GROUP,
        user_id: A,
        message: [{ type: 'text', data: { text } }],
      });
      const action = await postJson(`${service.url}/v1/channels/qq/actions/send_group_msg`, {
        group_id: GROUP,
        message: 'the agent speaking',
      });
      expect(action.status).toBe(200);
      await post(sent(901, 'the agent speaking'));
      await flushed(60);
      expect(await ofType('chat.takeover')).toEqual([]);
      await flushed(5000); // the owner answers after the agent's send is done
      const started = clock.now();
      await post(sent(902, 'I will handle this one'));
      await flushed(60);
      expect(await ofType('chat.takeover')).toMatchObject([
        { active: true, sessionKey: `qq:group:${GROUP}`, until: started + 5000 },
      ]);
      await say(6, 7, 'thanks boss');
      await flushed();
      expect(await ofType('chat.processedMessage')).toEqual([]);
      const takeover = (await (await fetch(`${service.url}/v1/sessions/qq%3Agroup%3A${GROUP}/takeover`)).json()) as {
        takeover: { active: boolean };
      };
      expect(takeover.takeover.active).toBe(true);
      await flushed(4000);
      const told = await ofType('chat.takeover');
      expect(told.map((o) => 'active' in o && o.active)).toEqual([true, false]);
      await say(7, 7, 'bot, are you there?');
      await flushed();
      const [message] = await ofType('chat.processedMessage');
      expect(message).toMatchObject({ content: 'bot, are you there?' });
      expect(message && 'context' in message && message.context.map((m) => m.content)).toEqual(['thanks boss']);
    } finally {
      napcat.close();
    }
  });

  it('takes nothing the bot account sends for a person when the agent answers through the platform itself', async () => {
    await start();
    await post({
      time: 1_718_000_050,
      self_id: A,
      post_type: 'message_sent',
      message_type: 'group',
      message_id: 903,
      group_id: GROUP,
      user_id: A,
      message: [{ type: 'text', data: { text: 'an answer the agent sent through NapCat' } }],
    });
    await say(8, 7, 'thanks');
    await flushed();
    expect(await ofType('chat.takeover')).toEqual([]);
    expect(await ofType('chat.processedMessage')).toHaveLength(1);
  });

  it('takes a session over by hand, one nothing was said in too, and gives it back', async () => {
    await start();
    const url = `${service.url}/v1/sessions/qq%3Agroup%3A777/takeover`;
    const put = await fetch(url, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"holdMs":15000}',
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({ takeover: { active: true, until: clock.now() + 15_000 } });
    const refused = await fetch(url, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"holdMs":-1}',
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: 'bad_hold' } });
    const ended = await fetch(url, { method: 'DELETE', headers: { 'x-requested-with': 'test' } });
    expect(await ended.json()).toMatchObject({ takeover: null, ended: { since: clock.now() } });
    expect(await (await fetch(url)).json()).toMatchObject({ takeover: null });
    await flushed(60);
    expect((await ofType('chat.takeover')).map((o) => 'active' in o && o.active)).toEqual([true, false]);
  });
});
