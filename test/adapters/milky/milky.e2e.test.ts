import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { outputOf, type ProcessedMessage as Output } from '../../../src/events/output.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG } from '../../support/servers.js';
import { fakeMilky, groupMessage, text } from './fake-milky.js';

const SELF = 10001;
const WINDOW_MS = 1000;

describe('Milky over its event WebSocket (adapter "milky")', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** The service on a manual clock, dialled in to a fake Milky server, with an OneBot HTTP channel beside it. */
  const start = async (extra: Record<string, unknown> = {}) => {
    const milky = await fakeMilky({ selfId: SELF, token: 'tok' });
    cleanups.push(() => milky.close());
    const clock = new ManualClock();
    const service: Running = await startService(
      {
        store: 'memory',
        debounce: { windowMs: WINDOW_MS, maxWaitMs: 5000 },
        ...extra,
        media: { dir: 'media', allowHosts: [`127.0.0.1:${milky.port}`] },
        channels: [
          {
            id: 'milky',
            adapter: 'milky',
            url: milky.url,
            accessToken: 'tok',
            reconnectMinMs: 20,
            reconnectMaxMs: 100,
          },
          { id: 'qq-http', adapter: 'onebot', secret: 'secret-b', namespace: 'qq' },
        ],
      },
      { clock },
    );
    cleanups.push(() => service.stop());
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const connection = async () => (await service.intake.connections()).find((view) => view.channel === 'milky');
    await until(() => milky.open === 1);
    const stats = (channel = 'milky') => service.intake.metrics.channelStats()[channel] ?? {};
    /** One event from the server, once the pipeline counted it. */
    const send = async (type: string, data: Record<string, unknown>) => {
      const before = JSON.stringify(stats());
      milky.event(type, data);
      await until(() => JSON.stringify(stats()) !== before);
    };
    /** Let the window close and its flush finish. */
    const flush = async (count: number) => {
      await clock.advance(WINDOW_MS);
      await until(async () => {
        await clock.advance(100);
        return outputs.length >= count;
      });
    };
    return { milky, clock, service, outputs, connection, stats, send, flush };
  };

  it('dials <url>/event with the token, names the bot from its first event, and merges three fragments into one output whose trace names the channel', async () => {
    const { milky, service, outputs, connection, send, flush } = await start();
    expect(milky.handshakes[0]?.authorization).toBe('Bearer tok');
    await send(
      'message_receive',
      groupMessage(1, [{ type: 'mention', data: { user_id: SELF, name: 'bot' } }, text(' my order')]),
    );
    await send('message_receive', groupMessage(2, [text('has not')]));
    await send('message_receive', groupMessage(3, [text('arrived')]));
    expect(await connection()).toMatchObject({ adapter: 'milky', transport: 'ws', botId: String(SELF), state: 'open' });
    await flush(1);
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({
      channel: 'milky',
      sessionKey: 'qq:group:123456',
      content: 'my order has not arrived',
      merged: 3,
      mentionedBots: [{ channel: 'milky', botId: String(SELF) }],
      replyBot: { channel: 'milky', botId: String(SELF) },
    });
    const trace = (await (
      await fetch(`${service.url}/v1/trace/${encodeURIComponent('10001:group:123456:2')}`)
    ).json()) as any;
    expect(trace.arrivals.map((arrival: any) => arrival.channel)).toEqual(['milky', 'milky', 'milky']);
    expect(trace.outputs.map((output: any) => output.id)).toEqual([outputs[0]!.id]);
  });

  it('answers one message the server sent twice once', async () => {
    const { outputs, stats, send, flush, clock } = await start();
    await send('message_receive', groupMessage(7, [text('only once')]));
    await send('message_receive', groupMessage(7, [text('only once')]));
    await flush(1);
    await clock.advance(WINDOW_MS * 3);
    expect(outputs.map((output) => output.content)).toEqual(['only once']);
    expect(stats()).toMatchObject({ received: 2, deduped: 1 });
  });

  it("downloads a friend's image from its temporary URL into the media folder", async () => {
    const { milky, service, outputs, send, flush } = await start();
    await send('message_receive', {
      message_scene: 'friend',
      peer_id: 777,
      message_seq: 42,
      sender_id: 777,
      time: 1718000001,
      segments: [
        text('look'),
        {
          type: 'image',
          data: { resource_id: 'r1', temp_url: `${milky.url}/media/shot.png?rkey=x`, width: 1, height: 1 },
        },
      ],
      friend: { user_id: 777, nickname: 'A' },
    });
    await flush(1);
    expect(outputs[0]).toMatchObject({ sessionKey: 'qq:777', content: 'look', mediaErrors: [] });
    expect(readFileSync(join(service.dir, outputs[0]!.media[0]!.path)).equals(PNG)).toBe(true);
  });

  it('keeps a message recalled within the window from the agent, and the rest of its group flows on', async () => {
    const { outputs, send, flush, stats, clock } = await start();
    await send('message_receive', groupMessage(9, [text('oops, wrong group')]));
    await send('message_receive', groupMessage(10, [text('still here')], 778));
    await send('message_recall', {
      message_scene: 'group',
      peer_id: 123456,
      message_seq: 9,
      sender_id: 777,
      operator_id: 777,
      display_suffix: '',
    });
    await flush(1);
    await clock.advance(WINDOW_MS * 3);
    expect(outputs.map((output) => output.content)).toEqual(['still here']);
    expect(stats()).toMatchObject({ received: 2, retracted: 1 });
  });

  it('gives one output naming both bots when a Milky bot and a OneBot bot deliver the same group message', async () => {
    const { service, outputs, stats, send, flush } = await start();
    await send(
      'message_receive',
      groupMessage(30, [{ type: 'mention', data: { user_id: SELF, name: 'bot' } }, text(' hello both')]),
    );
    const body = Buffer.from(
      JSON.stringify({
        time: 1718000000,
        self_id: 20002,
        post_type: 'message',
        message_type: 'group',
        sub_type: 'normal',
        message_id: 884213,
        group_id: 123456,
        user_id: 777,
        sender: { user_id: 777, nickname: 'a', card: 'A' },
        message: [
          { type: 'at', data: { qq: String(SELF) } },
          { type: 'text', data: { text: ' hello both' } },
        ],
      }),
    );
    const posted = await postJson(`${service.url}/webhooks/qq-http`, body.toString(), {
      'x-signature': `sha1=${createHmac('sha1', 'secret-b').update(body).digest('hex')}`,
    });
    expect(posted.status).toBe(204);
    await until(() => (stats('qq-http').received ?? 0) === 1);
    await flush(1);
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({
      content: 'hello both',
      merged: 1,
      bots: [
        { channel: 'milky', botId: String(SELF) },
        { channel: 'qq-http', botId: '20002' },
      ],
    });
  });

  it('reads a merged forward with get_forwarded_messages while the window is open, nested ones too', async () => {
    const { milky, outputs, send, flush } = await start();
    milky.forwards.set('fwd-1', [
      { sender_name: 'Ana', time: 1717990000, segments: [text('first')] },
      { sender_name: 'Bo', time: 1717990060, segments: [{ type: 'forward', data: { forward_id: 'fwd-2' } }] },
    ]);
    milky.forwards.set('fwd-2', [{ sender_name: 'Cy', time: 1717980000, segments: [text('deep')] }]);
    await send('message_receive', groupMessage(40, [{ type: 'forward', data: { forward_id: 'fwd-1', title: 't' } }]));
    await send('message_receive', groupMessage(41, [text('look at this')]));
    await until(() => milky.calls.filter((call) => call.action === 'get_forwarded_messages').length === 2);
    await flush(1);
    expect(outputs[0]!.content).toBe('[forwarded messages] look at this');
    expect(outputs[0]!.parts[0]!.forwarded).toEqual([
      { sender: { id: '', name: 'Ana' }, content: 'first', timestamp: 1717990000, media: [] },
      { sender: { id: '', name: 'Bo' }, content: '[forwarded messages]', timestamp: 1717990060, media: [] },
      { sender: { id: '', name: 'Cy' }, content: 'deep', timestamp: 1717980000, media: [] },
    ]);
    expect(outputs[0]!.forwardErrors).toBeUndefined();
  });

  it('dials again with the backoff after the server drops the socket, and reads on', async () => {
    const { milky, clock, outputs, connection, send, flush } = await start();
    await send('message_receive', groupMessage(50, [text('before')]));
    milky.drop();
    await until(async () => (await connection())?.state !== 'open');
    await until(async () => {
      await clock.advance(100);
      return milky.open === 1;
    });
    expect(milky.handshakes).toHaveLength(2);
    await until(async () => (await connection())?.state === 'open');
    expect(await connection()).toMatchObject({ reconnects: 1 });
    await send('message_receive', groupMessage(51, [text('after')], 778));
    await flush(2);
    expect(outputs.map((output) => output.content).sort()).toEqual(['after', 'before']);
  });

  it("takes the bot's own message sent through an action for ours, and one sent otherwise for a person taking over", async () => {
    const { service, send, clock } = await start({ takeover: { holdMs: 5000, maxMs: 20_000 } });
    const takeovers = async () =>
      (await service.intake.store.outboxAfter(0, 100))
        .map((record) => outputOf(record))
        .filter((output) => output.type === 'chat.takeover');
    // A member asks; the agent answers through the action API, which learnt the bot from the question.
    await send('message_receive', groupMessage(5000, [text('anyone there?')]));
    const action = await postJson(`${service.url}/v1/channels/milky/actions/send_group_message`, {
      group_id: 123456,
      message: [text('the agent speaking')],
    });
    expect(action.body.data).toMatchObject({ message_seq: 5001 });
    await send('message_receive', groupMessage(5001, [text('the agent speaking')], SELF));
    await clock.advance(60);
    await service.intake.settle();
    expect(await takeovers()).toEqual([]);
    await clock.advance(5000); // the owner answers after the agent's send is done
    await send('message_receive', groupMessage(5002, [text('I will handle this one')], SELF));
    await clock.advance(60);
    await service.intake.settle();
    expect(await takeovers()).toMatchObject([{ active: true, sessionKey: 'qq:group:123456' }]);
  });

  it('sends actions to <url>/api/<action> with the token and answers with what the server said', async () => {
    const { milky, service } = await start();
    const answer = await postJson(`${service.url}/v1/channels/milky/actions/send_group_message`, {
      group_id: 123456,
      message: [text('hi')],
    });
    expect(answer).toMatchObject({ status: 200, body: { status: 'ok', retcode: 0, data: { message_seq: 5001 } } });
    expect(milky.calls).toEqual([
      {
        action: 'send_group_message',
        params: { group_id: 123456, message: [text('hi')] },
        authorization: 'Bearer tok',
      },
    ]);
    // Nothing comes to a WebSocket channel by HTTP.
    const post = await postJson(`${service.url}/webhooks/milky`, { time: 1, self_id: SELF, event_type: 'x', data: {} });
    expect(post.status).toBe(401);
  });
});

describe('Milky over webhook POSTs ("transport": "webhook")', () => {
  let service: Running | undefined;
  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  it('takes a POST with the access token, and refuses a wrong or missing one with nothing recorded', async () => {
    service = await startService({
      store: 'memory',
      debounce: { windowMs: 50, maxWaitMs: 200 },
      channels: [{ id: 'milky-hook', adapter: 'milky', transport: 'webhook', accessToken: 'tok' }],
    });
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const event = {
      time: 1718000000,
      self_id: SELF,
      event_type: 'message_receive',
      data: groupMessage(11, [text('by hook')]),
    };
    const url = `${service.url}/webhooks/milky-hook`;
    expect((await postJson(url, event, { authorization: 'Bearer wrong' })).status).toBe(403);
    expect((await postJson(url, event)).body.error.code).toBe('token_missing');
    expect(service.intake.metrics.channelStats()['milky-hook']?.received ?? 0).toBe(0);
    expect((await postJson(url, event, { authorization: 'Bearer tok' })).status).toBe(204);
    await until(() => outputs.length === 1);
    expect(outputs[0]).toMatchObject({ channel: 'milky-hook', content: 'by hook', sessionKey: 'qq:group:123456' });
  });
});
