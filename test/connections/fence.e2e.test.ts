import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../src/events/output.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { until } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';
import { BOT_TOKEN, fakeGateway } from './fake-gateway.js';
import { APP_TOKEN, fakeSlack, message } from './fake-slack.js';
import { fakeTelegram, TOKEN, update } from './fake-telegram.js';

/*
 * One connection per bot across instances, fenced: two instances share one store, each on its
 * own manual clock. The holder is paused (its clock stands still: it neither renews nor notices
 * its lease running out) while the survivor's clock runs past the lease and takes it over. When
 * the paused holder wakes with work in hand, the store's fence refuses it: no event recorded, no
 * envelope acknowledged, no cursor written; the survivor records each once.
 */

const T = 1_700_000_000_000;
const LEASE_MS = 300;

describe('a paused holder whose lease a survivor took over', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  /** The store both instances use; each intake's close leaves it open (the test closes it last). */
  const shared = (): MemoryStore => {
    const store = new MemoryStore();
    const close = store.close.bind(store);
    store.close = async () => undefined;
    cleanups.unshift(close);
    return store;
  };
  const start = async (store: MemoryStore, clock: ManualClock, channel: Record<string, unknown>): Promise<Intake> => {
    const intake = await createIntake({
      logger: silent,
      store,
      clock,
      configFile: {
        store: 'memory',
        logLevel: 'silent',
        debounce: { windowMs: 50, maxWaitMs: 200 },
        channels: [channel],
      },
    });
    cleanups.push(() => intake.close());
    return intake;
  };
  /** Move the survivor's clock past the paused holder's lease, until it holds the connection. */
  const takeOver = async (clock: ManualClock, intake: Intake): Promise<void> => {
    await until(async () => {
      await clock.advance(LEASE_MS / 3);
      return (await intake.connections()).some((view) => view.state !== 'closed');
    });
  };

  it('records none of the updates its late poll brought and keeps no offset; the survivor records them once', async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    const store = shared();
    // Long polls held open: the paused holder's poll is still out when it loses the lease.
    const channel = {
      id: 'tg',
      adapter: 'telegram',
      transport: 'poll',
      botToken: TOKEN,
      apiBaseUrl: api.url,
      pollTimeoutS: 30,
      leaseMs: LEASE_MS,
      reconnectMinMs: 20,
      reconnectMaxMs: 100,
    };
    const late = await start(store, new ManualClock(T), channel);
    const outputs: Output[] = [];
    late.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    api.push(update(100, 'before the pause'));
    await until(() => api.offsets.includes('101'));
    const survivorClock = new ManualClock(T);
    const survivor = await start(store, survivorClock, channel);
    survivor.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await takeOver(survivorClock, survivor);
    await until(() => api.offsets.filter((offset) => offset === '101').length === 2);
    // Both polls are answered with the same update: only the survivor's lands.
    api.push(update(101, 'after the takeover'));
    await until(async () => {
      await survivorClock.advance(50);
      return outputs.length === 2;
    });
    expect(outputs.map((output) => output.content)).toEqual(['before the pause', 'after the takeover']);
    expect(late.metrics.channelStats().tg).toMatchObject({ received: 1 });
    expect(survivor.metrics.channelStats().tg).toMatchObject({ received: 1 });
    await until(async () => (await late.connections()).every((view) => view.state === 'closed'));
    await until(() => api.offsets.includes('102'));
    expect(await store.sharedGet('cursor:tg', T)).toBe('102');
  });

  it("neither records nor acknowledges an envelope on its old socket, which it closes; Slack's retry reaches the survivor", async () => {
    const slack = await fakeSlack();
    cleanups.push(() => slack.close());
    const store = shared();
    const channel = {
      id: 'slack',
      adapter: 'slack',
      transport: 'socket',
      appToken: APP_TOKEN,
      apiBaseUrl: slack.api,
      leaseMs: LEASE_MS,
      reconnectMinMs: 20,
      reconnectMaxMs: 100,
    };
    const late = await start(store, new ManualClock(T), channel);
    const outputs: Output[] = [];
    late.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(() => slack.state.open === 1);
    slack.envelope('env-1', message('1700000000.000100', 'before the pause'), 0, 0);
    await until(() => slack.acks.includes('env-1'));
    const survivorClock = new ManualClock(T);
    const survivor = await start(store, survivorClock, channel);
    survivor.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await takeOver(survivorClock, survivor);
    await until(() => slack.state.open === 2);
    // Slack sends the next envelope on the paused holder's socket: it must leave it to the survivor.
    slack.envelope('env-2', message('1700000001.000100', 'after the takeover'), 0, 0);
    await until(() => slack.state.open === 1);
    slack.envelope('env-2', message('1700000001.000100', 'after the takeover'), 1, 1);
    await until(() => slack.acks.length === 2);
    await until(async () => {
      await survivorClock.advance(50);
      return outputs.length === 2;
    });
    expect(slack.acksBySocket).toEqual([['env-1'], ['env-2']]);
    expect(outputs.map((output) => output.content)).toEqual(['before the pause', 'after the takeover']);
    expect(late.metrics.channelStats().slack).toMatchObject({ received: 1 });
    expect(survivor.metrics.channelStats().slack).toMatchObject({ received: 1 });
  });

  it('cannot forget the Gateway session the survivor resumed when its old socket is closed 4007 (a new session is not its to start)', async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const store = shared();
    const channel = {
      id: 'dc',
      adapter: 'discord',
      botToken: BOT_TOKEN,
      gatewayUrl: gateway.url,
      leaseMs: LEASE_MS,
      reconnectMinMs: 20,
      reconnectMaxMs: 100,
    };
    const late = await start(store, new ManualClock(T), channel);
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
    await until(async () => (await store.sharedGet('discord:cursor:dc', T))?.includes('session-1') === true);
    const survivorClock = new ManualClock(T);
    const survivor = await start(store, survivorClock, channel);
    await takeOver(survivorClock, survivor);
    await until(() => gateway.resumes().length === 1 && gateway.open() === 2);
    // Discord drops the paused holder's socket with 4007: it would start a new session and forget the kept one.
    gateway.sockets[0]?.close(4007, 'Invalid seq');
    await until(async () => (await late.connections()).every((view) => view.state === 'closed'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await store.sharedGet('discord:cursor:dc', T)).toContain('"sessionId":"session-1"');
    expect(gateway.identifies()).toBe(1);
    expect(gateway.open()).toBe(1);
  });
});
