import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import type { Store } from '../../../src/core/ports/index.js';
import { MemoryStore } from '../../../src/store/local/memory.js';

const SECRET = 'secret-a';

describe('NapCat typing on the real server (SQLite store)', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  const start = async (store?: Store) => {
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 1500, maxWaitMs: 7500 },
        channels: [{ id: 'qq-a', adapter: 'onebot', secret: SECRET, namespace: 'qq' }],
      },
      { clock, ...(store ? { store } : {}) },
    );
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const deliver = async (body: unknown) => {
      const text = JSON.stringify(body);
      const signature = `sha1=${createHmac('sha1', SECRET).update(text).digest('hex')}`;
      expect((await postJson(`${service.url}/webhooks/qq-a`, text, { 'x-signature': signature })).status).toBe(204);
    };
    const say = (id: number, text: string) =>
      deliver({
        ...fixture('onebot', 'private-vector.json'),
        message_id: id,
        message: [{ type: 'text', data: { text } }],
      });
    return { clock, outputs, deliver, say };
  };

  it('keeps two fragments of a friend who typed between them in one output', async () => {
    const { clock, outputs, deliver, say } = await start();
    await say(12, 'my order');
    await clock.advance(1000);
    await deliver(fixture('onebot', 'notice-input-status.json'));
    await clock.advance(1500);
    expect(outputs).toEqual([]);
    await say(13, 'has not arrived');
    await until(async () => {
      await clock.advance(100);
      return outputs.length === 1;
    });
    expect(outputs.map((output) => [output.sessionKey, output.content])).toEqual([
      ['qq:12345678', 'my order has not arrived'],
    ]);
    expect(service.intake.metrics.channelStats()['qq-a']).toMatchObject({ typing: 1 });
  });

  it('answers a signal the store fails to hold as any other, counts the store error, and keeps the window', async () => {
    const store = new MemoryStore();
    store.holdForTyping = () => Promise.reject(new Error('store away'));
    const { clock, outputs, deliver, say } = await start(store);
    await say(12, 'my order');
    await clock.advance(1000);
    await deliver(fixture('onebot', 'notice-input-status.json'));
    await until(async () => {
      await clock.advance(100);
      return outputs.length === 1;
    });
    expect(await service.intake.metrics.scrape()).toMatch(/inbox_store_errors_total\{op="typing"\} 1/);
  });
});
