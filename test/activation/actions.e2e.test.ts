import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { outputOf, type ProcessedMessage } from '../../src/events/output.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

/*
 * A OneBot bot that does not report message_sent (the default of most implementations): what it
 * sends through our actions is known by the action's answer, so a reply to it is addressed.
 */
describe('a reply to a message our bot sent through an action', () => {
  let service: Running;
  let socket: WebSocket | undefined;
  afterEach(async () => {
    socket?.terminate();
    await service?.stop();
  });

  it('is addressed in mention mode, by the id the send answered with', async () => {
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100 },
        activation: { group: 'mention' },
        channels: [{ id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', namespace: 'qq' }],
      },
      { clock },
    );
    const bot = new WebSocket(`${service.url.replace('http', 'ws')}/webhooks/qq`, {
      headers: { authorization: 'Bearer tok', 'x-self-id': '10001', 'x-client-role': 'Universal' },
    });
    socket = bot;
    bot.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { echo?: string };
      if (frame.echo)
        bot.send(JSON.stringify({ status: 'ok', retcode: 0, data: { message_id: 4242 }, echo: frame.echo }));
    });
    await new Promise((resolve, reject) => bot.once('open', resolve).once('error', reject));
    const sent = await postJson(`${service.url}/v1/channels/qq/actions/send_group_msg`, {
      group_id: 555,
      message: 'the answer is 42',
    });
    expect(sent.status).toBe(200);
    const say = (id: number, message: unknown[]) =>
      bot.send(
        JSON.stringify({
          time: 1_718_000_000 + id,
          self_id: 10001,
          post_type: 'message',
          message_type: 'group',
          sub_type: 'normal',
          message_id: id,
          group_id: 555,
          user_id: 1,
          sender: { user_id: 1 },
          message,
        }),
      );
    const trace = async (id: number) => (await fetch(`${service.url}/v1/trace/${id}`)).status === 200;
    const outputs = async () =>
      (await service.intake.store.outboxAfter(0, 10)).map((record) => outputOf(record) as ProcessedMessage);
    say(1, [
      { type: 'reply', data: { id: '4241' } },
      { type: 'text', data: { text: 'not that one' } },
    ]);
    await until(() => trace(1));
    await clock.advance(150);
    await until(async () => (await service.intake.store.conversation('qq:group:555', clock.now())).context.length > 0);
    say(2, [
      { type: 'reply', data: { id: '4242' } },
      { type: 'text', data: { text: 'why 42?' } },
    ]);
    await until(() => trace(2));
    await clock.advance(150);
    await until(async () => (await outputs()).length > 0);
    expect(
      (await outputs()).map((output) => [output.content, output.trigger, output.context.map((m) => m.content)]),
    ).toEqual([['why 42?', 'reply', ['not that one']]]);
  });
});
