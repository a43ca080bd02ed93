import { afterEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../../src/core/errors.js';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { createIntake, type Intake } from '../../../src/service/intake.js';
import { MemoryStore } from '../../../src/store/local/memory.js';
import { until } from '../../support/helpers.js';
import { silent } from '../../support/logger.js';
import { APP_TOKEN, fakeSlack, message } from '../../connections/fake-slack.js';

describe('Slack Socket Mode ("transport": "socket")', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const start = async (api: string, store?: MemoryStore): Promise<Intake> => {
    const intake = await createIntake({
      logger: silent,
      ...(store ? { store } : {}),
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
            reconnectMinMs: 20,
            reconnectMaxMs: 100,
          },
        ],
      },
    });
    cleanups.push(() => intake.close());
    return intake;
  };

  it('opens a socket from apps.connections.open, acknowledges each envelope once recorded, and takes a retry as a duplicate', async () => {
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const intake = await start(slack.api);
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(
      async () =>
        (await intake.connections())[0]?.state === 'open' && (await intake.connections())[0]?.lastHeartbeatAt !== null,
    );
    expect((await intake.connections())[0]).toMatchObject({
      channel: 'slack',
      adapter: 'slack',
      transport: 'socket',
      state: 'open',
    });
    slack.envelope('env-1', message('1700000000.000100', 'hello'));
    slack.envelope('env-1b', message('1700000000.000100', 'hello'), 1); // Slack's retry of the same event
    await until(() => slack.acks.length === 2);
    expect(slack.acks).toEqual(['env-1', 'env-1b']);
    await until(() => outputs.length === 1);
    expect(outputs[0]).toMatchObject({ channel: 'slack', content: 'hello' });
    expect(intake.metrics.channelStats().slack).toMatchObject({ received: 2, deduped: 1 });
  });

  it('does not acknowledge an envelope it could not record, so Slack sends it again', async () => {
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    let failing = true;
    const store = new MemoryStore();
    const admit = store.admit.bind(store);
    store.admit = (items, now) =>
      failing ? Promise.reject(new UnavailableError('store_unavailable', 'down for the test', 1)) : admit(items, now);
    const intake = await start(slack.api, store);
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(() => slack.state.open === 1);
    slack.envelope('env-2', message('1700000001.000100', 'kept'));
    // Not recorded: no ack, and the socket is closed (1013) so the reconnect shows the outage.
    await until(() => slack.state.opened === 2 && slack.state.open === 1);
    expect(slack.acks).toEqual([]);
    failing = false;
    slack.envelope('env-2', message('1700000001.000100', 'kept'), 1);
    await until(() => slack.acks.includes('env-2'));
    await until(() => outputs.length === 1);
    expect(outputs[0]?.content).toBe('kept');
  });

  it('opens the next socket when Slack warns of a disconnect, before the old one closes, and reads on', async () => {
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const intake = await start(slack.api);
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(() => slack.state.open === 1);
    slack.disconnect();
    await until(() => slack.state.opened === 2 && slack.state.open === 1);
    expect(slack.state.urls).toBe(2);
    expect(slack.state.mostAtOnce).toBe(2); // the next one was open before the old one closed
    slack.envelope('env-3', message('1700000002.000100', 'after refresh'));
    await until(() => outputs.length === 1);
    expect(slack.acks).toEqual(['env-3']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(slack.state.opened).toBe(2); // no reconnect of its own after the replaced socket closed
  });

  it('fails at start, naming the setting, without an appToken, and refuses a POST to a socket channel', async () => {
    await expect(
      createIntake({
        logger: silent,
        configFile: { store: 'memory', channels: [{ id: 's', adapter: 'slack', transport: 'socket' }] },
      }),
    ).rejects.toThrow(
      /channels\[0\]\.appToken \(channel "s"\): is required: the slack adapter opens the Socket Mode connection with it/,
    );
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const intake = await start(slack.api);
    const refused = await intake
      .ingest('slack', {
        headers: {},
        body: Buffer.from(JSON.stringify(message('1.1', 'x'))),
        query: new URLSearchParams(),
        now: Date.now(),
      })
      .catch((error: Error & { status?: number }) => error);
    expect(refused).toMatchObject({ status: 401 });
  });
});
