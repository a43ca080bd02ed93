import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { UnavailableError } from '../../src/errors.js';
import type { ProcessedMessage as Output } from '../../src/events/output.js';
import { createIntake, type Intake } from '../../src/intake.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { silent, until } from '../helpers.js';

const APP_TOKEN = 'xapp-1-A1-test';

/**
 * Slack's Socket Mode on 127.0.0.1: `apps.connections.open` (app token checked) hands out a
 * WebSocket URL; each socket gets `hello`; `envelope()` sends an events_api envelope on the
 * newest socket; acknowledgements are collected; `disconnect()` sends a refresh warning.
 */
async function fakeSlack() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const sockets: WebSocket[] = [];
  const acks: string[] = [];
  const state = { opened: 0, mostAtOnce: 0, open: 0, urls: 0 };
  wss.on('connection', (socket) => {
    sockets.push(socket);
    state.opened++;
    state.open++;
    state.mostAtOnce = Math.max(state.mostAtOnce, state.open);
    socket.on('close', () => { state.open--; });
    socket.on('message', (data) => acks.push((JSON.parse(data.toString()) as { envelope_id: string }).envelope_id));
    socket.send(JSON.stringify({ type: 'hello', num_connections: 1, connection_info: { app_id: 'A1' } }));
  });
  const wsPort = (wss.address() as AddressInfo).port;
  const http: Server = createServer((req, res) => {
    if (req.url !== '/api/apps.connections.open' || req.headers.authorization !== `Bearer ${APP_TOKEN}`) {
      res.end(JSON.stringify({ ok: false, error: 'invalid_auth' }));
      return;
    }
    state.urls++;
    res.end(JSON.stringify({ ok: true, url: `ws://127.0.0.1:${wsPort}/link/?ticket=${state.urls}` }));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const live = () => sockets.filter((socket) => socket.readyState === socket.OPEN);
  return {
    api: `http://127.0.0.1:${(http.address() as AddressInfo).port}/api`,
    state, acks,
    envelope(id: string, payload: unknown, retry = 0) {
      live().at(-1)?.send(JSON.stringify({ envelope_id: id, type: 'events_api', payload, accepts_response_payload: false, retry_attempt: retry, retry_reason: retry ? 'timeout' : '' }));
    },
    disconnect() {
      live().at(-1)?.send(JSON.stringify({ type: 'disconnect', reason: 'warning', debug_info: { host: 'x' } }));
    },
    async close() {
      for (const socket of sockets) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

const message = (ts: string, text: string) => ({
  type: 'event_callback', team_id: 'T1', api_app_id: 'A1', event_id: `Ev${ts.replace('.', '')}`, event_time: 1700000000,
  authorizations: [{ team_id: 'T1', user_id: 'UBOT', is_bot: true }],
  event: { type: 'message', channel: 'C1', channel_type: 'channel', user: 'U1', text, ts },
});

describe('Slack Socket Mode ("transport": "socket")', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const start = async (api: string, store?: MemoryStore): Promise<Intake> => {
    const intake = await createIntake({
      logger: silent, ...(store ? { store } : {}),
      configFile: {
        store: 'memory', logLevel: 'silent', debounce: { windowMs: 50, maxWaitMs: 200 },
        channels: [{ id: 'slack', adapter: 'slack', transport: 'socket', appToken: APP_TOKEN, apiBaseUrl: api, reconnectMinMs: 20, reconnectMaxMs: 100 }],
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
    intake.on('chat.processedMessage', (output) => { outputs.push(output); });
    await until(async () => (await intake.connections())[0]?.state === 'open' && (await intake.connections())[0]?.lastHeartbeatAt !== null);
    expect((await intake.connections())[0]).toMatchObject({ channel: 'slack', adapter: 'slack', transport: 'socket', state: 'open' });
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
    store.admit = (items, now) => (failing ? Promise.reject(new UnavailableError('store_unavailable', 'down for the test', 1)) : admit(items, now));
    const intake = await start(slack.api, store);
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => { outputs.push(output); });
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
    intake.on('chat.processedMessage', (output) => { outputs.push(output); });
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
    await expect(createIntake({ logger: silent, configFile: { store: 'memory', channels: [{ id: 's', adapter: 'slack', transport: 'socket' }] } }))
      .rejects.toThrow(/channels\[0\]\.appToken \(channel "s"\): is required: the slack adapter opens the Socket Mode connection with it/);
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const intake = await start(slack.api);
    const refused = await intake.ingest('slack', { headers: {}, body: Buffer.from(JSON.stringify(message('1.1', 'x'))), query: new URLSearchParams(), now: Date.now() }).catch((error: Error & { status?: number }) => error);
    expect(refused).toMatchObject({ status: 401 });
  });
});
