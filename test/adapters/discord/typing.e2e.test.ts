import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { createIntake, type Intake } from '../../../src/service/intake.js';
import { until } from '../../support/helpers.js';
import { silent } from '../../support/logger.js';
import { ManualClock } from '../../support/manual-clock.js';
import { BOT_TOKEN, fakeGateway } from '../../connections/fake-gateway.js';

const ANA = '1150000000000000001';
const GUILD_CHANNEL = '1170000000000000001';

describe('Discord typing over the Gateway', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** The service on a manual clock, a 1.5 s window, and the fake Gateway identified. */
  const start = async (debounce: Record<string, number>) => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const clock = new ManualClock();
    const intake: Intake = await createIntake({
      logger: silent,
      clock,
      configFile: {
        store: 'memory',
        logLevel: 'silent',
        debounce: { windowMs: 1500, ...debounce },
        channels: [{ id: 'dc', adapter: 'discord', botToken: BOT_TOKEN, gatewayUrl: gateway.url }],
      },
    });
    cleanups.push(() => intake.close());
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
    const stats = () => intake.metrics.channelStats().dc ?? {};
    /** A message from ana, once admitted. */
    const say = async (id: string, content: string) => {
      const before = stats().received ?? 0;
      gateway.dispatch({ id, content });
      await until(() => (stats().received ?? 0) === before + 1);
    };
    /** Ana typing in the guild channel, once it held her buffer. */
    const type = async () => {
      const before = stats().typing ?? 0;
      gateway.op({
        op: 0,
        s: null,
        t: 'TYPING_START',
        d: { channel_id: GUILD_CHANNEL, guild_id: '1160000000000000001', user_id: ANA, timestamp: 1 },
      });
      await until(() => (stats().typing ?? 0) === before + 1);
    };
    return { gateway, clock, outputs, say, type };
  };

  it('identifies with the typing intents', async () => {
    const { gateway } = await start({});
    expect(gateway.received.find((f) => f.op === 2)?.d.intents & ((1 << 11) | (1 << 14))).toBe((1 << 11) | (1 << 14));
  });

  it('merges a fragment sent 2.5 s after the first when its sender was typing in between', async () => {
    const { clock, outputs, say, type } = await start({ maxWaitMs: 7500 });
    await say('1', 'my order');
    await clock.advance(1000);
    await type();
    await clock.advance(1500);
    expect(outputs).toEqual([]);
    await say('2', 'has not arrived');
    await until(async () => {
      await clock.advance(100);
      return outputs.length === 1;
    });
    expect(outputs.map((output) => output.content)).toEqual(['my order has not arrived']);
  });

  it('emits two outputs for the same two fragments without the typing signal', async () => {
    const { clock, outputs, say } = await start({ maxWaitMs: 7500 });
    await say('1', 'my order');
    await clock.advance(2500);
    expect(outputs.map((output) => output.content)).toEqual(['my order']);
    await say('2', 'has not arrived');
    await until(async () => {
      await clock.advance(100);
      return outputs.length === 2;
    });
    expect(outputs.map((output) => output.content)).toEqual(['my order', 'has not arrived']);
  });

  it('never holds a buffer past maxWaitMs from its first message', async () => {
    const { clock, outputs, say, type } = await start({ maxWaitMs: 2000 });
    await say('1', 'my order');
    await clock.advance(1000);
    await type();
    await clock.advance(900);
    expect(outputs).toEqual([]);
    await clock.advance(200);
    expect(outputs.map((output) => output.content)).toEqual(['my order']);
  });

  it('holds nothing with debounce.typingMs 0', async () => {
    const { clock, outputs, say, gateway } = await start({ maxWaitMs: 7500, typingMs: 0 });
    await say('1', 'my order');
    await clock.advance(1000);
    gateway.op({ op: 0, s: null, t: 'TYPING_START', d: { channel_id: GUILD_CHANNEL, user_id: ANA, guild_id: '1' } });
    await clock.advance(1500);
    expect(outputs.map((output) => output.content)).toEqual(['my order']);
  });
});
