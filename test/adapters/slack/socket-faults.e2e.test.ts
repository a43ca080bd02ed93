import type pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { createIntake, type Intake } from '../../../src/service/intake.js';
import { until } from '../../support/helpers.js';
import { recordingLogger, silent } from '../../support/logger.js';
import { ManualClock } from '../../support/manual-clock.js';
import { APP_TOKEN, fakeSlack, message } from '../../connections/fake-slack.js';
import { metric } from '../../connections/scrape.js';

describe('Slack Socket Mode under faults', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const start = async (
    api: string,
    options: { clock?: ManualClock; logger?: pino.Logger; reconnect?: [number, number] } = {},
  ): Promise<{ intake: Intake; outputs: Output[] }> => {
    const [reconnectMinMs, reconnectMaxMs] = options.reconnect ?? [20, 100];
    const intake = await createIntake({
      logger: options.logger ?? silent,
      ...(options.clock ? { clock: options.clock } : {}),
      configFile: {
        store: 'memory',
        logLevel: 'silent',
        debounce: { windowMs: 50, maxWaitMs: 200 },
        channels: [
          {
            id: 'slack',
            adapter: 'slack',
            transport: 'socket',
            appToken: APP_TOKEN,
            apiBaseUrl: api,
            reconnectMinMs,
            reconnectMaxMs,
          },
        ],
      },
    });
    cleanups.push(() => intake.close());
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    return { intake, outputs };
  };

  it('acknowledges envelopes of types it does not read (slash commands, interactions, unknown ones) and keeps none of them', async () => {
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const { intake, outputs } = await start(slack.api);
    await until(() => slack.state.open === 1);
    slack.send({
      envelope_id: 'env-slash',
      type: 'slash_commands',
      payload: { command: '/ask', text: 'hello' },
      accepts_response_payload: true,
    });
    slack.send({
      envelope_id: 'env-click',
      type: 'interactive',
      payload: { type: 'block_actions' },
      accepts_response_payload: false,
    });
    slack.send({ envelope_id: 'env-new', type: 'some_future_type', payload: { text: 'not a message' } });
    slack.envelope('env-msg', message('1700000003.000100', 'a message after them'));
    await until(() => slack.acks.length === 4);
    expect(slack.acks).toEqual(['env-slash', 'env-click', 'env-new', 'env-msg']);
    await until(() => outputs.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(outputs.map((output) => output.content)).toEqual(['a message after them']);
    expect(intake.metrics.channelStats().slack).toMatchObject({ received: 1 });
    expect(slack.state.opened).toBe(1); // none of them broke the socket
  });

  it('moves to a new socket on a refresh_requested disconnect, before the old one closes, and reads on', async () => {
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const { outputs } = await start(slack.api);
    await until(() => slack.state.open === 1);
    slack.disconnect('refresh_requested');
    await until(() => slack.state.opened === 2 && slack.state.open === 1);
    expect(slack.state.urls).toBe(2);
    expect(slack.state.mostAtOnce).toBe(2);
    slack.envelope('env-r', message('1700000004.000100', 'after the refresh'));
    await until(() => outputs.length === 1);
    expect(slack.acks).toEqual(['env-r']);
    expect(slack.acksBySocket[1]).toEqual(['env-r']);
  });

  it('counts the socket in inbox_connections and inbox_connection_events_total (open, reconnect, close)', async () => {
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const { intake } = await start(slack.api);
    await until(() => slack.state.open === 1);
    await until(
      async () => metric(await intake.metrics.scrape(), 'inbox_connections{channel="slack",transport="socket"}') === 1,
    );
    expect(
      metric(
        await intake.metrics.scrape(),
        'inbox_connection_events_total{channel="slack",transport="socket",event="open"}',
      ),
    ).toBe(1);
    slack.disconnect();
    await until(
      async () =>
        metric(
          await intake.metrics.scrape(),
          'inbox_connection_events_total{channel="slack",transport="socket",event="close"}',
        ) === 1,
    );
    const scrape = await intake.metrics.scrape();
    expect(metric(scrape, 'inbox_connection_events_total{channel="slack",transport="socket",event="reconnect"}')).toBe(
      1,
    );
    expect(metric(scrape, 'inbox_connections{channel="slack",transport="socket"}')).toBe(1);
    await intake.close();
    expect(metric(await intake.metrics.scrape(), 'inbox_connections{channel="slack",transport="socket"}')).toBe(0);
  });

  describe('regression: a Slack that asks for a new socket after every hello', () => {
    /** Move the manual clock `ms` in steps, letting the dials it starts run in between. */
    const run = async (clock: ManualClock, ms: number) => {
      for (let spent = 0; spent < ms; spent += 250) await clock.advance(250);
    };

    it.each(['warning', 'refresh_requested'])(
      'asks apps.connections.open no faster than the backoff allows (disconnect reason %s)',
      async (reason) => {
        const slack = await fakeSlack();
        cleanups.push(() => slack.close());
        slack.state.afterHello = reason;
        const clock = new ManualClock();
        await start(slack.api, { clock, reconnect: [1000, 30_000] });
        await until(() => slack.state.urls >= 1);
        await run(clock, 60_000);
        // From 1 s doubling to 30 s, each wait at least half its ceiling: the dial at 0 and at most
        // 7 more by 60 s (0.5 + 1 + 2 + 4 + 7.5 + 15 + 15 ... s apart), not one per round trip.
        expect(slack.state.urls).toBeLessThanOrEqual(8);
        expect(slack.state.urls).toBeGreaterThanOrEqual(3);
      },
    );

    it('says Socket Mode was turned off on link_disabled, closes the socket and asks again only after reconnectMaxMs', async () => {
      const slack = await fakeSlack();
      cleanups.push(() => slack.close());
      slack.state.afterHello = 'link_disabled';
      const { logger, lines } = recordingLogger('warn');
      const clock = new ManualClock();
      await start(slack.api, { clock, logger, reconnect: [1000, 30_000] });
      await until(() => lines.some((line) => line.level === 50 && /turned Socket Mode off/.test(line.msg)));
      expect(lines.find((line) => line.level === 50)?.msg).toMatch(/api\.slack\.com\/apps/);
      await until(() => slack.state.open === 0);
      await run(clock, 29_500);
      expect(slack.state.urls).toBe(1);
      await run(clock, 1000);
      await until(() => slack.state.urls === 2);
    });
  });
});
