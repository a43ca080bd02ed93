import { afterEach, describe, expect, it } from 'vitest';
import { ALLOWED_UPDATES } from '../../../src/adapters/telegram/poll.js';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { createIntake, type Intake } from '../../../src/service/intake.js';
import { until } from '../../support/helpers.js';
import { silent } from '../../support/logger.js';
import { ManualClock } from '../../support/manual-clock.js';
import { fakeTelegram, TOKEN, update } from '../../connections/fake-telegram.js';
import { metric } from '../../connections/scrape.js';

describe('Telegram long polling under faults', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const start = async (url: string, clock?: ManualClock): Promise<Intake> => {
    const intake = await createIntake({
      logger: silent,
      ...(clock ? { clock } : {}),
      configFile: {
        store: 'memory',
        logLevel: 'silent',
        debounce: { windowMs: 50, maxWaitMs: 200 },
        channels: [
          {
            id: 'tg',
            adapter: 'telegram',
            transport: 'poll',
            botToken: TOKEN,
            apiBaseUrl: url,
            pollTimeoutS: 1,
            reconnectMinMs: 20,
            reconnectMaxMs: 100,
          },
        ],
      },
    });
    cleanups.push(() => intake.close());
    return intake;
  };

  it('asks getUpdates for the update types the adapter reads (allowed_updates) with the poll timeout', async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    await start(api.url);
    await until(() => api.queries.length >= 1);
    expect(JSON.parse(api.queries[0]?.get('allowed_updates') ?? 'null')).toEqual(ALLOWED_UPDATES);
    expect(ALLOWED_UPDATES).toEqual(
      expect.arrayContaining(['message', 'edited_message', 'channel_post', 'callback_query']),
    );
    expect(api.queries[0]?.get('timeout')).toBe('1');
  });

  it('gives up a long poll that is never answered (stalled) after the timeout and a margin, asks again, and loses nothing', async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    api.state.stall = true;
    const clock = new ManualClock();
    const intake = await start(api.url, clock);
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(() => api.offsets.length === 1);
    // pollTimeoutS 1: Telegram answers an idle poll within 1 s; 15 s more and it is stalled.
    await clock.armed(16_000);
    await clock.advance(15_000);
    expect(api.offsets.length).toBe(1);
    api.state.stall = false;
    api.push(update(500, 'after the stall'));
    await clock.advance(1000);
    await until(async () => {
      await clock.advance(50);
      return outputs.length === 1;
    });
    await until(() => api.offsets.length >= 3);
    expect(api.offsets.slice(0, 3)).toEqual([null, null, '501']);
    expect(outputs[0]?.content).toBe('after the stall');
    expect(intake.metrics.channelStats().tg).toMatchObject({ received: 1 });
  });

  it('counts the poll in inbox_connections and inbox_connection_events_total (open, reconnect after a failure, close)', async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    const intake = await start(api.url);
    await until(async () => (await intake.connections())[0]?.state === 'open');
    let scrape = await intake.metrics.scrape();
    expect(metric(scrape, 'inbox_connections{channel="tg",transport="poll"}')).toBe(1);
    expect(metric(scrape, 'inbox_connection_events_total{channel="tg",transport="poll",event="open"}')).toBe(1);
    api.state.failWith.push(502);
    api.push(update(600, 'wakes the held poll'));
    await until(
      async () =>
        metric(
          await intake.metrics.scrape(),
          'inbox_connection_events_total{channel="tg",transport="poll",event="reconnect"}',
        ) === 1,
    );
    await intake.close();
    scrape = await intake.metrics.scrape();
    expect(metric(scrape, 'inbox_connections{channel="tg",transport="poll"}')).toBe(0);
    expect(metric(scrape, 'inbox_connection_events_total{channel="tg",transport="poll",event="close"}')).toBe(1);
  });
});
