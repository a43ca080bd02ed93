import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { connect, napcat } from '../../connections/reverse-bot.js';

/** A private message frame of the NapCat fixture: message `id` from `user`. */
const message = (id: number, user = 12345678, text = `message ${id}`) =>
  JSON.stringify({
    ...fixture('onebot', 'private-vector.json'),
    message_id: id,
    user_id: user,
    sender: { user_id: user, nickname: 'u' },
    message: [{ type: 'text', data: { text } }],
    raw_message: text,
  });

describe('a reverse WebSocket read whole', () => {
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  for (const store of ['memory', 'sqlite'] as const) {
    it(`records the frames of one read in one store step, in the order they came (${store} store)`, async () => {
      service = await startService({
        ...(store === 'memory' ? { store: 'memory' } : {}),
        channels: [{ id: 'qq-ws', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', namespace: 'qq' }],
      });
      const running = service;
      const received = async () =>
        ((await (await fetch(`${running.url}/v1/stats`)).json()) as { channels: { 'qq-ws'?: { received: number } } })
          .channels['qq-ws']?.received ?? 0;
      const socket = await connect(service, napcat());
      // Warm up: the bot's first frame names it, and the backlog is counted once.
      socket.send(message(1, 1));
      await until(async () => (await received()) === 1);
      const admits = vi.spyOn(service.intake.store, 'admit');
      // Twenty frames sent in one go.
      for (let id = 2; id <= 21; id++) socket.send(message(id, id % 3));
      await until(async () => (await received()) === 21);
      // One store step for the read (two when the loopback splits the bytes in two reads), not one per frame.
      expect(admits.mock.calls.length).toBeLessThanOrEqual(2);
      expect(admits.mock.calls.flatMap(([items]) => items.map((item) => item.part.event.platformId))).toEqual(
        Array.from({ length: 20 }, (_, n) => `10001000:${n + 2}`),
      );
      socket.close();
    });
  }
  it('holds the buffer a message of the same read opened when a typing frame follows it', async () => {
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 1500, maxWaitMs: 7500 },
        channels: [{ id: 'qq-ws', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', namespace: 'qq' }],
      },
      { clock },
    );
    const running = service;
    const outputs: Output[] = [];
    running.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const socket = await connect(running, napcat());
    // The message and the friend typing again, in one read: the typing waits for the buffer the message opens.
    socket.send(message(12, undefined, 'my order'));
    socket.send(JSON.stringify(fixture('onebot', 'notice-input-status.json')));
    await until(() => running.intake.metrics.channelStats()['qq-ws']?.typing === 1);
    await clock.advance(2000);
    expect(outputs).toEqual([]);
    socket.send(message(13, undefined, 'has not arrived'));
    await until(async () => {
      await clock.advance(100);
      return outputs.length === 1;
    });
    expect(outputs.map((output) => output.content)).toEqual(['my order has not arrived']);
    socket.close();
  });
});
