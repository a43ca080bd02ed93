import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';

import { BOT, BOT_TOKEN, fakeKook } from './fake-kook.js';

describe('a KOOK channel on the WebSocket gateway ("transport": "ws")', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  let clock: ManualClock;
  const start = async (kook: Awaited<ReturnType<typeof fakeKook>>) => {
    clock = new ManualClock();
    const service: Running = await startService(
      {
        store: 'memory',
        debounce: { windowMs: 100, maxWaitMs: 400 },
        channels: [
          {
            id: 'kk',
            adapter: 'kook',
            transport: 'ws',
            botToken: BOT_TOKEN,
            apiBaseUrl: `http://127.0.0.1:${kook.api.port}`,
            reconnectMinMs: 10,
            reconnectMaxMs: 20,
          },
        ],
      },
      { clock },
    );
    cleanups.push(() => service.stop());
    const messages: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (m) => {
      messages.push(m);
    });
    return { service, messages };
  };
  const message = (msgId: string, content: string, authorId = '777') => {
    const d = fixture('kook', 'text-person.json').d;
    delete d.verify_token;
    return { ...d, msg_id: msgId, content, author_id: authorId, msg_timestamp: clock.now() };
  };
  const quiet = () => clock.advance(200);

  it('connects with the bot token, reads events, pings with the last sn, and ignores our own bot (its id read with the token)', async () => {
    const kook = await fakeKook();
    cleanups.push(() => kook.close());
    const { service, messages } = await start(kook);
    await until(() => kook.open() === 1);
    expect(kook.paths).toEqual(['/gateway?compress=0&token=abc']);
    await until(
      async () => (await service.intake.connections()).some((c) => c.botId === BOT && c.state === 'open'),
      5000,
      () => service.intake.connections(),
    );
    expect((await service.intake.connections())[0]).toMatchObject({
      channel: 'kk',
      adapter: 'kook',
      transport: 'gateway',
    });
    kook.event(message('g-1', '帮我查一下'));
    kook.event(message('g-2', '订单'));
    kook.event(message('g-own', '机器人自己', BOT));
    await until(() => service.intake.metrics.channelStats().kk?.received === 2);
    await until(() => service.intake.metrics.channelStats().kk?.ignored === 1);
    await quiet();
    await until(() => messages.length === 1);
    expect(messages[0]).toMatchObject({
      sessionKey: 'kook:777',
      content: '帮我查一下订单',
      messageIds: ['g-1', 'g-2'],
    });
    // PING every 30 s ± 5 with the last sn recorded.
    await clock.advance(35_000);
    await until(() => kook.received.some((frame) => frame.s === 2));
    expect(kook.received.find((frame) => frame.s === 2)).toEqual({ s: 2, sn: 3 });
  });

  it('resumes a dropped session from the sn kept in the store: a replayed event is not emitted twice', async () => {
    const kook = await fakeKook();
    cleanups.push(() => kook.close());
    const { messages } = await start(kook);
    await until(() => kook.open() === 1);
    const first = message('r-1', '第一条');
    kook.event(first);
    await quiet();
    await until(() => messages.length === 1);
    kook.newest().terminate();
    await until(async () => {
      await clock.advance(20);
      return kook.paths.length === 2 && kook.open() === 1;
    });
    const resumed = new URL(kook.paths[1]!, 'ws://x').searchParams;
    expect([resumed.get('resume'), resumed.get('sn'), resumed.get('sessionId'), resumed.get('token')]).toEqual([
      '1',
      '1',
      'session-1',
      'abc',
    ]);
    // The server replays what it thinks we missed, then new events.
    kook.event(first, 1);
    kook.event(message('r-2', '第二条'));
    await quiet();
    await until(() => messages.length === 2);
    await quiet();
    expect(messages.map((m) => m.messageIds)).toEqual([['r-1'], ['r-2']]);
  });

  it('takes a socket whose PING gets no PONG within 6 s down and resumes the session', async () => {
    const kook = await fakeKook();
    cleanups.push(() => kook.close());
    await start(kook);
    await until(() => kook.open() === 1);
    kook.state.pong = false;
    await clock.advance(35_000);
    await until(() => kook.received.some((frame) => frame.s === 2));
    kook.state.pong = true;
    await clock.advance(6000);
    await until(async () => {
      await clock.advance(20);
      return kook.paths.length === 2 && kook.open() === 1;
    });
    expect(new URL(kook.paths[1]!, 'ws://x').searchParams.get('resume')).toBe('1');
  });

  it('dials again when no HELLO comes within 6 s', async () => {
    const kook = await fakeKook();
    cleanups.push(() => kook.close());
    kook.state.hello = -1;
    await start(kook);
    await until(() => kook.open() === 1);
    await clock.advance(6000);
    await until(async () => {
      await clock.advance(20);
      return kook.paths.length === 2;
    });
    // No session was opened: nothing to resume.
    expect(kook.paths[1]).toBe('/gateway?compress=0&token=abc');
  });

  it('starts a new session on a fresh gateway URL when KOOK says RECONNECT', async () => {
    const kook = await fakeKook();
    cleanups.push(() => kook.close());
    await start(kook);
    await until(() => kook.open() === 1);
    kook.event(message('n-1', 'hi'));
    kook.newest().send(JSON.stringify({ s: 5, d: { code: 40108, err: 'sn not found' } }));
    await until(async () => {
      await clock.advance(20);
      return kook.paths.length === 2 && kook.open() === 1;
    });
    expect(kook.paths[1]).toBe('/gateway?compress=0&token=abc');
    expect(kook.api.hits.get('/api/v3/gateway/index')).toBe(2);
  });

  it('stops on a refused token (HELLO 40101) and refuses webhook POSTs', async () => {
    const kook = await fakeKook();
    cleanups.push(() => kook.close());
    kook.state.hello = 40101;
    const { service } = await start(kook);
    await until(() => kook.paths.length === 1 && kook.open() === 0);
    await clock.advance(1000);
    expect(kook.paths).toHaveLength(1);
    const response = await fetch(`${service.url}/webhooks/kk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ s: 0, d: message('p-1', 'hi') }),
    });
    expect(response.status).toBe(401);
  });
});
