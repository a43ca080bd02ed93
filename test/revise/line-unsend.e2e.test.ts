import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { outputOf, type Output } from '../../src/events/output.js';
import { postJson, startService, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

/*
 * A LINE `unsend` end to end (contract §13), on the memory store: the message a user unsends
 * inside its debounce window never reaches the agent; one unsent after it was emitted is told
 * once as chat.retracted, naming the output and the message by its LINE message id.
 */
const SECRET = 'line-channel-secret';
const sign = (body: string) => createHmac('sha256', SECRET).update(body).digest('base64');
const GROUP = { type: 'group', groupId: 'Cgrp', userId: 'U4af' };
const ONE_TO_ONE = { type: 'user', userId: 'U4af' };

let sequence = 0;
/** One webhook event of `type` from `source`, with its own webhookEventId unless one is given. */
function lineEvent(type: string, source: object, extra: object, webhookEventId = `01HEVENT${++sequence}`) {
  return {
    type,
    mode: 'active',
    webhookEventId,
    deliveryContext: { isRedelivery: false },
    timestamp: 1692251680000 + sequence * 1000,
    source,
    ...extra,
  };
}
const text = (source: object, id: string, words: string) =>
  lineEvent('message', source, {
    replyToken: `r${id}`,
    message: { id, type: 'text', quoteToken: `q${id}`, text: words },
  });
const unsend = (source: object, id: string, webhookEventId?: string) =>
  lineEvent('unsend', source, { unsend: { messageId: id } }, webhookEventId);

describe('LINE unsend on the memory store', () => {
  let service: Running;
  let clock: ManualClock;
  afterEach(async () => {
    await service?.stop();
  });

  async function start() {
    clock = new ManualClock();
    service = await startService(
      {
        store: 'memory',
        debounce: { windowMs: 1000, maxWaitMs: 3000 },
        channels: [{ id: 'line', adapter: 'line', channelSecret: SECRET }],
      },
      { clock },
    );
  }

  /** Deliver `events` in one signed webhook request. */
  const post = async (...events: object[]) => {
    const body = JSON.stringify({ destination: 'Ubot', events });
    const answer = await postJson(`${service.url}/webhooks/line`, body, { 'x-line-signature': sign(body) });
    expect(answer.status).toBe(200);
    return answer.body as { events: Array<{ id: string; verdict: string }> };
  };
  const outputs = async (): Promise<Output[]> =>
    (await service.intake.store.outboxAfter(0, 100)).map((record) => outputOf(record));
  const ofType = async (type: Output['type']) => (await outputs()).filter((output) => output.type === type);
  /** Past the window, and the flush done. */
  const flushed = async (ms = 1100) => {
    await clock.advance(ms);
    await service.intake.settle();
  };

  it('never emits a message unsent 300 ms after it was sent; the next one is emitted alone', async () => {
    await start();
    await post(text(ONE_TO_ONE, '7001', 'wrong chat, sorry'));
    await clock.advance(300);
    await post(unsend(ONE_TO_ONE, '7001'));
    await flushed(2000);
    expect(await outputs()).toEqual([]);
    const trace = (await (await fetch(`${service.url}/v1/trace/7001`)).json()) as {
      arrivals: Array<{ verdict: string }>;
    };
    expect(trace.arrivals.map((arrival) => arrival.verdict)).toContain('retracted');
    await post(text(ONE_TO_ONE, '7002', 'hello'));
    await flushed();
    const messages = await ofType('chat.processedMessage');
    expect(messages).toMatchObject([{ sessionKey: 'line:U4af', content: 'hello', messageIds: ['7002'] }]);
  });

  it('tells an unsend after emission once as chat.retracted, though LINE redelivers it', async () => {
    await start();
    await post(text(GROUP, '7101', 'a secret'));
    await flushed();
    const [message] = await ofType('chat.processedMessage');
    expect(message).toMatchObject({ sessionKey: 'line:group:Cgrp', messageIds: ['7101'] });
    const recall = unsend(GROUP, '7101', '01HUNSEND');
    await post(recall);
    await post({ ...recall, deliveryContext: { isRedelivery: true } });
    await flushed(60);
    const retracted = await ofType('chat.retracted');
    expect(retracted).toHaveLength(1);
    expect(retracted[0]).toMatchObject({
      type: 'chat.retracted',
      outputId: message!.id,
      messageId: '7101',
      sessionKey: 'line:group:Cgrp',
      channel: 'line',
    });
    expect(await ofType('chat.notice')).toEqual([]);
  });

  it('keeps an unsend of a message it never saw a chat.notice', async () => {
    await start();
    await post(unsend(GROUP, '6999'));
    await flushed(60);
    expect(await outputs()).toMatchObject([{ type: 'chat.notice', detail: 'unsend', sessionKey: 'line:group:Cgrp' }]);
  });

  it('still answers a redelivered message as a duplicate of the first, under its webhookEventId', async () => {
    await start();
    const first = text(ONE_TO_ONE, '7201', 'once');
    expect((await post(first)).events).toEqual([{ id: first.webhookEventId, verdict: 'accepted' }]);
    expect((await post({ ...first, deliveryContext: { isRedelivery: true } })).events).toEqual([
      { id: first.webhookEventId, verdict: 'duplicate' },
    ]);
    await flushed();
    expect((await ofType('chat.processedMessage')).map((o) => 'content' in o && o.content)).toEqual(['once']);
  });
});
