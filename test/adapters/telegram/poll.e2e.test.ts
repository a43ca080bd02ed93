import { join } from 'node:path';
import type pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { UnavailableError } from '../../../src/core/errors.js';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { createIntake, type Intake } from '../../../src/service/intake.js';
import { MemoryStore } from '../../../src/store/local/memory.js';
import { tempDir, until } from '../../support/helpers.js';
import { recordingLogger, silent } from '../../support/logger.js';
import { ManualClock } from '../../support/manual-clock.js';
import { fakeTelegram, TOKEN, update } from '../../connections/fake-telegram.js';

describe('Telegram long polling ("transport": "poll")', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const start = async (
    api: { url: string },
    options: { store?: MemoryStore; file?: Record<string, unknown>; logger?: pino.Logger; clock?: ManualClock } = {},
  ): Promise<Intake> => {
    const intake = await createIntake({
      logger: options.logger ?? silent,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.store ? { store: options.store } : {}),
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
            apiBaseUrl: api.url,
            pollTimeoutS: 1,
            reconnectMinMs: 20,
            reconnectMaxMs: 100,
          },
        ],
        ...options.file,
      },
    });
    cleanups.push(() => intake.close());
    return intake;
  };

  /** A poll channel on a fake Bot API and a manual clock, open, its outputs collected. */
  const polling = async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    const clock = new ManualClock();
    const intake = await start(api, { clock });
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(async () => (await intake.connections())[0]?.state === 'open');
    return { api, clock, intake, outputs };
  };

  it('polls getUpdates, emits the updates, and moves the offset past them only once they are recorded', async () => {
    // The two updates are recorded one after the other: on a manual clock they land in one window however slow the machine.
    const { api, clock, intake, outputs } = await polling();
    expect((await intake.connections())[0]).toMatchObject({
      channel: 'tg',
      adapter: 'telegram',
      transport: 'poll',
      botId: '123456',
      state: 'open',
    });
    api.push(update(100, 'hello'), update(101, 'there'));
    await until(() => intake.metrics.channelStats().tg?.received === 2);
    await clock.advance(50);
    await until(() => outputs.length === 1);
    expect(outputs[0]).toMatchObject({ sessionKey: 'tg:42', content: 'hello there', merged: 2 });
    await until(() => api.offsets.includes('102'));
    // Nothing was asked past an update before it was recorded, and nothing came twice.
    expect(api.offsets.filter((offset) => offset !== null && Number(offset) > 102)).toEqual([]);
    expect(intake.metrics.channelStats().tg).toMatchObject({ received: 2 });
  });

  it('records the updates of one page in one store step, in the order they came', async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    const store = new MemoryStore();
    const admits = vi.spyOn(store, 'admit');
    const intake = await start(api, { store, clock: new ManualClock() });
    await until(async () => (await intake.connections())[0]?.state === 'open');
    api.push(update(200, 'one'), update(201, 'two'), update(202, 'three'));
    await until(() => intake.metrics.channelStats().tg?.received === 3);
    expect(admits).toHaveBeenCalledTimes(1);
    expect(admits.mock.calls[0]![0].map((item) => item.part.event.text)).toEqual(['one', 'two', 'three']);
  });

  it('applies an edit polled in the same page as its message where the message waits: one output, the new text', async () => {
    const { api, clock, outputs } = await polling();
    const original = update(300, 'meet at 5');
    const edited = {
      update_id: 301,
      edited_message: { ...original.message, text: 'meet at 6', edit_date: 1718000009 },
    };
    api.push(original, edited);
    await until(async () => api.offsets.includes('302'));
    await clock.advance(50);
    await until(() => outputs.length === 1);
    // The edit waited for the page's message to be recorded: applied in its buffer, not a second message.
    expect(outputs[0]).toMatchObject({ sessionKey: 'tg:42', content: 'meet at 6', merged: 1 });
    await clock.advance(1_000);
    expect(outputs).toHaveLength(1);
  });

  it('keeps the offset while the store cannot record, asks again, and emits each update once', async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    let failing = true;
    const store = new MemoryStore();
    const admit = store.admit.bind(store);
    store.admit = (items, now) =>
      failing ? Promise.reject(new UnavailableError('store_unavailable', 'down for the test', 1)) : admit(items, now);
    const intake = await start(api, { store });
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    api.push(update(200, 'kept'));
    await until(() => api.offsets.filter((offset) => offset === null).length >= 3);
    expect(api.offsets.every((offset) => offset === null)).toBe(true);
    failing = false;
    await until(() => outputs.length === 1);
    await until(() => api.offsets.includes('201'));
    expect(outputs.map((o) => o.content)).toEqual(['kept']);
  });

  it('resumes after a restart from the offset kept in the store', async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    const dir = tempDir();
    cleanups.push(async () => dir.remove());
    const file = { store: `sqlite:${join(dir.path, 'intake.db')}` };
    const first = await start(api, { file });
    api.push(update(300, 'before restart'));
    await until(() => api.offsets.includes('301'));
    await first.close();
    const asked = api.offsets.length;
    await start(api, { file });
    await until(() => api.offsets.length > asked);
    expect(api.offsets[asked]).toBe('301');
  });

  it('says to call deleteWebhook while Telegram answers 409, keeps serving, and polls once the webhook is gone', async () => {
    const api = await fakeTelegram();
    cleanups.push(() => api.close());
    api.state.conflict = true;
    const { logger, lines } = recordingLogger('warn');
    const intake = await start(api, { logger });
    await until(() => lines.some((line) => /deleteWebhook/.test(line.msg) && line.level === 50));
    expect((await intake.connections())[0]?.state).toBe('connecting');
    api.state.conflict = false;
    await until(async () => (await intake.connections())[0]?.state === 'open', 5000);
    // A POST to a polling channel is no one's.
    const refused = await intake
      .ingest('tg', {
        headers: {},
        body: Buffer.from(JSON.stringify(update(1, 'x'))),
        query: new URLSearchParams(),
        now: Date.now(),
      })
      .catch((error: Error & { status?: number }) => error);
    expect(refused).toMatchObject({ status: 401 });
  });

  it('waits the retry_after Telegram asks for on a 429, backs off on a 502, and loses nothing', async () => {
    const telegram = await fakeTelegram();
    cleanups.push(() => telegram.close());
    telegram.state.failWith.push(502, 429);
    const clock = new ManualClock();
    const intake = await start(telegram, { clock });
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    telegram.push(update(300, 'after the flood control'));
    // The 502: a short backoff; then the 429: the next poll waits the 7 s Telegram asked for.
    await until(async () => {
      await clock.advance(100);
      return telegram.offsets.length >= 2;
    });
    await clock.armed(7000);
    const asked = telegram.offsets.length;
    await clock.advance(6000);
    expect(telegram.offsets.length).toBe(asked);
    await until(async () => {
      await clock.advance(1000);
      return outputs.length === 1;
    });
    expect(outputs[0]?.content).toBe('after the flood control');
  });

  describe('regression: an answer from behind the offset', () => {
    it('never moves the stored offset backwards and does not take the stale updates in again', async () => {
      const api = await fakeTelegram();
      cleanups.push(() => api.close());
      const clock = new ManualClock();
      const intake = await start(api, { clock });
      const outputs: Output[] = [];
      intake.on('chat.processedMessage', (output) => {
        outputs.push(output);
      });
      const stored = async () => Number(await intake.store.sharedGet('cursor:tg', clock.now()));
      api.push(update(700, 'first'), update(701, 'second'));
      await until(async () => (await stored()) === 702);
      await until(async () => {
        await clock.advance(250);
        return outputs.length === 1;
      });
      // The next answer carries only an update the offset is already past (update_id 700 < 702).
      const asked = api.offsets.length;
      api.stale(update(700, 'first'));
      await until(() => api.offsets.length >= asked + 2);
      api.push(update(702, 'third'));
      await until(async () => (await stored()) === 703);
      const polled = api.offsets.filter((offset) => offset !== null).map(Number);
      expect(polled).toEqual([...polled].sort((a, b) => a - b));
      await until(async () => {
        await clock.advance(250);
        return outputs.length === 2;
      });
      expect(outputs.map((output) => output.content)).toEqual(['first second', 'third']);
      expect(intake.metrics.channelStats().tg).toMatchObject({ received: 3 });
      expect(intake.metrics.channelStats().tg?.deduped).toBeUndefined();
    });
  });

  it('fails at start, naming the setting, for "transport": "poll" without a botToken', async () => {
    await expect(
      createIntake({
        logger: silent,
        configFile: { store: 'memory', channels: [{ id: 'tg', adapter: 'telegram', transport: 'poll' }] },
      }),
    ).rejects.toThrow(/channels\[0\]\.botToken \(channel "tg"\): is required/);
  });
});
