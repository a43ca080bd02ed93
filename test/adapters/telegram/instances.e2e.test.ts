import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { until } from '../../support/helpers.js';
import { takeoverInstances } from '../../connections/takeover.js';
import { fakeTelegram, TOKEN, update } from '../../connections/fake-telegram.js';

/*
 * Two instances on one real redis-server share one Telegram channel polled with getUpdates: one
 * holds the poll (the channel's lease); when it is killed the survivor takes it over and polls
 * from the offset kept in the store: nothing confirmed is lost, nothing is emitted twice.
 */

const instances = takeoverInstances();

// The victim child must keep the channel until it is killed (a holder that cannot renew for 2/3 of
// its lease lets go): a lease that outlasts a 1 s stall on a loaded machine.
const channel = (url: string) => ({
  id: 'tg',
  adapter: 'telegram',
  transport: 'poll',
  botToken: TOKEN,
  apiBaseUrl: url,
  pollTimeoutS: 1,
  leaseMs: 1500,
  reconnectMinMs: 20,
  reconnectMaxMs: 200,
});

describe('a Telegram polling channel on several instances', () => {
  it('is taken over by a survivor when its holder is killed (kill -9), which polls on from the stored offset; nothing lost, nothing twice', async () => {
    const prefix = `tg${process.pid}`;
    const api = await fakeTelegram();
    instances.cleanup(() => api.close());
    const victim = await instances.victim(prefix, channel(api.url));
    await until(() => api.offsets.length >= 1, 10_000);
    const survivor = await instances.survivor(prefix, channel(api.url));
    const outputs = async () =>
      (await survivor.intake.store.outboxAfter(0, 100)).flatMap((output) => output.messageIds ?? []);
    // One chat each: no merging, one output per update.
    for (let id = 100; id < 105; id++) api.push(update(id, `update ${id}`, id));
    await until(async () => (await outputs()).length === 5, 10_000);
    await until(() => api.offsets.includes('105'), 10_000);
    const before = api.offsets.length;
    // The victim polled from 105 last, so updates 100-104 are confirmed to Telegram.
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await until(() => api.offsets.length > before, 10_000);
    // The survivor's first poll starts at the stored offset, never from the start.
    expect(api.offsets.slice(before).every((offset) => offset === '105')).toBe(true);
    api.push(update(105, 'after the takeover', 105));
    await until(async () => (await outputs()).length === 6, 10_000);
    await until(() => api.offsets.includes('106'), 10_000);
    const ids = await outputs();
    expect(ids.sort()).toEqual(['100', '101', '102', '103', '104', '105'].map((id) => `123456:${id}:${id}`));
    expect(survivor.intake.metrics.channelStats().tg).toMatchObject({ received: 1 });
  }, 40_000);
});
