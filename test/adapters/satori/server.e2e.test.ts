import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { recordingLogger } from '../../support/logger.js';
import { ManualClock } from '../../support/manual-clock.js';
import { realSatori } from './real-satori.js';

/*
 * The channel against a real Satori server from npm (@satorijs/server on @satorijs/router), a
 * bot of our own on @satorijs/core's Bot reporting the events. What that server cannot be
 * driven to do (replay after an sn, drop a socket) is in the fake server's tests.
 */

const TOKEN = 'real-token';
const WINDOW_MS = 1000;
const group = { channel: { id: '123456', type: 0 }, guild: { id: '123456' } };
const from = (id: string) => ({ user: { id, name: `user ${id}` } });

describe('a Satori channel on the Satori reference server', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const start = async (token = TOKEN) => {
    const satori = await realSatori(TOKEN);
    cleanups.push(() => satori.close());
    const clock = new ManualClock();
    const { logger, lines } = recordingLogger('warn');
    const service: Running = await startService(
      {
        store: 'memory',
        debounce: { windowMs: WINDOW_MS, maxWaitMs: 5000 },
        channels: [
          {
            id: 'koishi',
            adapter: 'satori',
            url: satori.url,
            token,
            namespaces: { onebot: 'qq' },
            reconnectMinMs: 1000,
            reconnectMaxMs: 4000,
          },
        ],
      },
      { clock, logger },
    );
    cleanups.push(() => service.stop());
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const received = () => service.intake.metrics.channelStats().koishi?.received ?? 0;
    /** One event the bot reports, once the pipeline counted it. */
    const deliver = async (event: Record<string, unknown>) => {
      const before = JSON.stringify(service.intake.metrics.channelStats().koishi ?? {});
      satori.receive(event);
      await until(() => JSON.stringify(service.intake.metrics.channelStats().koishi ?? {}) !== before);
    };
    const flush = async (count: number) => {
      await clock.advance(WINDOW_MS);
      await until(async () => {
        await clock.advance(100);
        return outputs.length >= count;
      });
    };
    return { satori, clock, service, outputs, lines, received, deliver, flush };
  };

  it("identifies, learns the server's login, and merges three fragments of a QQ group into one output addressed to the bot", async () => {
    const { satori, service, outputs, received, flush } = await start();
    await until(async () =>
      (await service.intake.connections()).some((view) => view.botId === '10001' && view.state === 'open'),
    );
    satori.receive({
      type: 'message',
      ...group,
      ...from('777'),
      message: { id: 'm1', content: '<at id="10001"/> 帮我查一下' },
    });
    satori.receive({ type: 'message', ...group, ...from('777'), message: { id: 'm2', content: '订单 ORD-123' } });
    satori.receive({ type: 'message', ...group, ...from('777'), message: { id: 'm3', content: '的状态' } });
    await until(() => received() === 3);
    await flush(1);
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({
      sourceChannel: 'satori',
      sessionKey: 'qq:group:123456',
      content: '帮我查一下订单 ORD-123 的状态',
      merged: 3,
      messageIds: ['onebot:10001:123456:m1', 'onebot:10001:123456:m2', 'onebot:10001:123456:m3'],
      mentionedBots: [{ channel: 'koishi', botId: '10001' }],
      sender: { id: '777', name: 'user 777' },
    });
  });

  it('keeps a message the server reports deleted within the window from the agent', async () => {
    const { service, outputs, deliver, flush, clock } = await start();
    // READY came: the server takes the socket's events (a socket merely open may not be identified yet).
    await until(async () => (await service.intake.connections()).some((view) => view.botId === '10001'));
    await deliver({ type: 'message', ...group, ...from('778'), message: { id: 'x1', content: 'wrong group' } });
    await deliver({ type: 'message-deleted', ...group, ...from('778'), message: { id: 'x1' } });
    await clock.advance(WINDOW_MS * 3);
    await deliver({ type: 'message', ...group, ...from('779'), message: { id: 'x2', content: 'kept' } });
    await flush(1);
    expect(outputs.map((output) => output.content)).toEqual(['kept']);
  });

  it("sends message.create through the server to the bot, with the login's headers", async () => {
    const { satori, service } = await start();
    await until(async () => (await service.intake.connections()).some((view) => view.botId === '10001'));
    const answer = await postJson(
      `${service.url}/v1/channels/koishi/actions/message.create`,
      JSON.stringify({ channel_id: '123456', content: '<quote id="m3"/>on it' }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([{ id: 'sent-1', content: expect.any(String) }]);
    expect(satori.sent).toEqual([{ channelId: '123456', content: '<quote id="m3"/>on it' }]);
    expect(satori.headers.at(-1)).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      'satori-platform': 'onebot',
      'satori-user-id': '10001',
    });
  });

  it('logs the close 4004 of a wrong token once as an error and dials again only with the backoff', async () => {
    const { lines, clock, service } = await start('wrong-token');
    await until(() => lines.some((line) => /refused our token \(close 4004/.test(line.msg)));
    expect(lines.filter((line) => line.level === 50)).toHaveLength(1);
    await clock.advance(5000);
    await until(async () => {
      await clock.advance(500);
      return (await service.intake.connections()).some((view) => view.reconnects >= 2);
    }, 10_000);
    expect(lines.filter((line) => /refused our token/.test(line.msg) && line.level === 50)).toHaveLength(1);
  });
});
