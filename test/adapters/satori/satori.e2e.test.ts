import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { outputOf, type ProcessedMessage as Output } from '../../../src/events/output.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG } from '../../support/servers.js';
import { fakeSatori, LOGIN, satoriMessage, TOKEN } from './fake-satori.js';

const WINDOW_MS = 1000;
const BOT = LOGIN.user.id;

describe('a Satori server over its event socket (adapter "satori")', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** The service on a manual clock, dialled in to a fake Satori server, with a OneBot HTTP channel beside it. */
  const start = async (extra: Record<string, unknown> = {}, token = TOKEN) => {
    const satori = await fakeSatori();
    cleanups.push(() => satori.close());
    const clock = new ManualClock();
    const service: Running = await startService(
      {
        store: 'memory',
        debounce: { windowMs: WINDOW_MS, maxWaitMs: 5000 },
        ...extra,
        media: { dir: 'media', allowHosts: [`127.0.0.1:${satori.port}`] },
        channels: [
          {
            id: 'sat',
            adapter: 'satori',
            url: satori.url,
            token,
            namespaces: { onebot: 'qq' },
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
    const stats = (channel = 'sat') => service.intake.metrics.channelStats()[channel] ?? {};
    /** One event from the server, once the pipeline counted it. */
    const send = async (body: Record<string, unknown>) => {
      const before = JSON.stringify(stats());
      satori.event(body);
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
    return { satori, clock, service, outputs, stats, send, flush };
  };

  it('identifies with the token, learns the login from READY, and merges three fragments into one output whose trace names the channel', async () => {
    const { satori, service, outputs, send, flush } = await start();
    await until(() => satori.open() === 1);
    expect(satori.identifies[0]).toEqual({ token: TOKEN });
    await until(async () => (await service.intake.connections()).some((view) => view.botId === BOT));
    expect((await service.intake.connections())[0]).toMatchObject({
      channel: 'sat',
      adapter: 'satori',
      transport: 'ws',
      botId: BOT,
      state: 'open',
    });
    await send(satoriMessage('m1', `<at id="${BOT}" name="bot"/> 帮我查一下`));
    await send(satoriMessage('m2', '订单 ORD-123'));
    await send(satoriMessage('m3', '的状态'));
    await flush(1);
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({
      channel: 'sat',
      sourceChannel: 'satori',
      sessionKey: 'qq:group:123456',
      content: '帮我查一下订单 ORD-123 的状态',
      merged: 3,
      mentionedBots: [{ channel: 'sat', botId: BOT }],
      replyBot: { channel: 'sat', botId: BOT },
      reply: { channel: 'sat', botId: BOT, params: { channel_id: '123456', message_id: 'm3' } },
    });
    const trace = (await (
      await fetch(`${service.url}/v1/trace/${encodeURIComponent('onebot:10001:123456:m2')}`)
    ).json()) as any;
    expect(trace.arrivals.map((arrival: any) => arrival.channel)).toEqual(['sat', 'sat', 'sat']);
    expect(trace.outputs.map((output: any) => output.id)).toEqual([outputs[0]!.id]);
  });

  it('answers one message the server sent twice once', async () => {
    const { satori, outputs, stats, send, flush, clock } = await start();
    await until(() => satori.open() === 1);
    await send(satoriMessage('twice', 'only once'));
    await send(satoriMessage('twice', 'only once'));
    await flush(1);
    await clock.advance(WINDOW_MS * 3);
    expect(outputs.map((output) => output.content)).toEqual(['only once']);
    expect(stats()).toMatchObject({ received: 2, deduped: 1 });
  });

  it('downloads an image by its URL and an internal: resource through the server proxy into the media folder', async () => {
    const { satori, service, outputs, send, flush } = await start();
    await until(() => satori.open() === 1);
    await send(
      satoriMessage(
        'pic',
        `look <img src="${satori.base}/media/shot.png?rkey=x"/><img src="internal:onebot/10001/image/abc?x=1"/>`,
        { direct: true },
      ),
    );
    await flush(1);
    expect(outputs[0]).toMatchObject({ sessionKey: 'qq:private:777', content: 'look', mediaErrors: [] });
    expect(outputs[0]!.media).toHaveLength(2);
    for (const item of outputs[0]!.media) expect(readFileSync(join(service.dir, item.path)).equals(PNG)).toBe(true);
    expect(satori.proxied).toEqual(['internal:onebot/10001/image/abc?x=1']);
  });

  it('gives one output naming both bots when a Satori QQ login and a OneBot bot deliver the same group message', async () => {
    const { satori, service, outputs, stats, send, flush } = await start();
    await until(() => satori.open() === 1);
    await send(satoriMessage('m30', `<at id="${BOT}" name="bot"/> hello both`, { timestamp: 1718000000000 }));
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
          { type: 'at', data: { qq: BOT } },
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
        { channel: 'sat', botId: BOT },
        { channel: 'qq-http', botId: '20002' },
      ],
    });
  });

  it('keeps a message recalled while its window is open from the agent', async () => {
    const { satori, outputs, send, clock } = await start();
    await until(() => satori.open() === 1);
    await send(satoriMessage('gone', 'oops, wrong group'));
    const deleted = satoriMessage('gone', '');
    await send({ ...deleted, type: 'message-deleted', operator: { id: '777' } });
    await clock.advance(WINDOW_MS * 3);
    await send(satoriMessage('kept', 'this one stays'));
    await clock.advance(WINDOW_MS);
    await until(async () => {
      await clock.advance(100);
      return outputs.length >= 1;
    });
    expect(outputs.map((output) => output.content)).toEqual(['this one stays']);
  });

  it('tells a deletion after emission once as chat.retracted, and takes an edit in the window as the new text', async () => {
    const { satori, service, outputs, send, flush, clock } = await start();
    await until(() => satori.open() === 1);
    await send(satoriMessage('said', 'a secret'));
    await flush(1);
    const deleted = { ...satoriMessage('said', ''), type: 'message-deleted' };
    await send(deleted);
    await send(deleted);
    await clock.advance(WINDOW_MS);
    await service.intake.settle();
    const retracted = (await service.intake.store.outboxAfter(0, 100))
      .map((record) => outputOf(record))
      .filter((output) => output.type === 'chat.retracted');
    expect(retracted).toHaveLength(1);
    expect(retracted[0]).toMatchObject({
      outputId: outputs[0]!.id,
      messageId: 'onebot:10001:123456:said',
      sessionKey: 'qq:group:123456',
      channel: 'sat',
    });
    await send(satoriMessage('typo', 'teh order'));
    const edit = satoriMessage('typo', 'the order');
    await send({ ...edit, type: 'message-updated', message: { id: 'typo', content: 'the order', updated_at: 1 } });
    await flush(2);
    expect(outputs[1]).toMatchObject({ content: 'the order', messageIds: ['onebot:10001:123456:typo'] });
  });

  it('sends message.create with the bearer token and the login headers, and knows a reply to what it sent', async () => {
    const { satori, service, outputs, send, flush } = await start({ activation: { group: 'mention' } });
    await until(() => satori.open() === 1);
    await until(async () => (await service.intake.connections()).some((view) => view.botId === BOT));
    const answer = await postJson(
      `${service.url}/v1/channels/sat/actions/message.create`,
      JSON.stringify({ channel_id: '123456', content: 'on it' }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([{ id: 'sent-1', content: 'on it' }]);
    expect(satori.calls).toHaveLength(1);
    expect(satori.calls[0]).toMatchObject({
      method: 'message.create',
      params: { channel_id: '123456', content: 'on it' },
      headers: { authorization: `Bearer ${TOKEN}`, 'satori-platform': 'onebot', 'satori-user-id': BOT },
    });
    // A reply to the bot's message addresses the bots, though its quote names no author.
    await send(satoriMessage('r1', '<quote id="sent-1"/>thanks'));
    await flush(1);
    expect(outputs[0]).toMatchObject({ content: 'thanks', trigger: 'reply' });
    const refused = await postJson(`${service.url}/v1/channels/sat/actions/not-a-call`, '{}');
    expect(refused.status).toBe(400);
  });

  it("remembers a send through a login of another platform in that platform's conversations", async () => {
    const { satori, service, outputs, send, flush } = await start({ activation: { group: 'mention' } });
    await until(() => satori.open() === 1);
    const login = { sn: 2, status: 1, platform: 'discord', user: { id: 'd-1' } };
    await send({ type: 'login-added', timestamp: Date.now(), login });
    const answer = await postJson(
      `${service.url}/v1/channels/sat/actions/message.create?self_id=d-1`,
      JSON.stringify({ channel_id: 'c9', content: 'hello' }),
    );
    expect(answer.status).toBe(200);
    expect(satori.calls[0]?.headers).toMatchObject({ 'satori-platform': 'discord', 'satori-user-id': 'd-1' });
    await send({
      type: 'message-created',
      timestamp: Date.now(),
      login,
      channel: { id: 'c9', type: 0 },
      guild: { id: 'g9' },
      user: { id: 'u9' },
      message: { id: 'r9', content: '<quote id="sent-1"/>thanks' },
    });
    await flush(1);
    expect(outputs[0]).toMatchObject({ sessionKey: 'satori:group:discord:c9', content: 'thanks', trigger: 'reply' });
  });
});
