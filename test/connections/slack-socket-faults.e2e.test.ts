import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../src/events/output.js';
import { createIntake, type Intake } from '../../src/intake.js';
import { silent, until } from '../helpers.js';
import { APP_TOKEN, fakeSlack, message } from './fake-slack.js';
import { metric } from './scrape.js';

describe('Slack Socket Mode under faults', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const start = async (api: string): Promise<{ intake: Intake; outputs: Output[] }> => {
    const intake = await createIntake({
      logger: silent,
      configFile: {
        store: 'memory', logLevel: 'silent', debounce: { windowMs: 50, maxWaitMs: 200 },
        channels: [{ id: 'slack', adapter: 'slack', transport: 'socket', appToken: APP_TOKEN, apiBaseUrl: api, reconnectMinMs: 20, reconnectMaxMs: 100 }],
      },
    });
    cleanups.push(() => intake.close());
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => { outputs.push(output); });
    return { intake, outputs };
  };

  it('acknowledges envelopes of types it does not read (slash commands, interactions, unknown ones) and keeps none of them', async () => {
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const { intake, outputs } = await start(slack.api);
    await until(() => slack.state.open === 1);
    slack.send({ envelope_id: 'env-slash', type: 'slash_commands', payload: { command: '/ask', text: 'hello' }, accepts_response_payload: true });
    slack.send({ envelope_id: 'env-click', type: 'interactive', payload: { type: 'block_actions' }, accepts_response_payload: false });
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
    await until(async () => metric(await intake.metrics.scrape(), 'inbox_connections{channel="slack",transport="socket"}') === 1);
    expect(metric(await intake.metrics.scrape(), 'inbox_connection_events_total{channel="slack",transport="socket",event="open"}')).toBe(1);
    slack.disconnect();
    await until(async () => metric(await intake.metrics.scrape(), 'inbox_connection_events_total{channel="slack",transport="socket",event="close"}') === 1);
    const scrape = await intake.metrics.scrape();
    expect(metric(scrape, 'inbox_connection_events_total{channel="slack",transport="socket",event="reconnect"}')).toBe(1);
    expect(metric(scrape, 'inbox_connections{channel="slack",transport="socket"}')).toBe(1);
    await intake.close();
    expect(metric(await intake.metrics.scrape(), 'inbox_connections{channel="slack",transport="socket"}')).toBe(0);
  });
});
