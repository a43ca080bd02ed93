import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { until } from '../../support/helpers.js';
import { takeoverInstances } from '../../connections/takeover.js';
import { BOT_TOKEN, fakeGateway } from '../../connections/fake-gateway.js';

/*
 * Two instances on one real redis-server share one Discord channel: one holds the Gateway
 * connection (the channel's lease); when it is killed the survivor takes it over and RESUMEs
 * the session from the cursor in the store; what the Gateway replays is not emitted twice.
 */

const instances = takeoverInstances();

// The victim child must keep the channel until it is killed (a holder that cannot renew for 2/3 of
// its lease lets go): a lease that outlasts a 1 s stall on a loaded machine.
const channel = (url: string) => ({
  id: 'dc',
  adapter: 'discord',
  botToken: BOT_TOKEN,
  gatewayUrl: url,
  leaseMs: 1500,
  reconnectMinMs: 20,
  reconnectMaxMs: 200,
});

describe('a Discord channel on several instances', () => {
  it('is taken over by a survivor when its holder is killed (kill -9), which resumes the session; nothing twice', async () => {
    const prefix = `dc${process.pid}`;
    const gateway = await fakeGateway();
    instances.cleanup(() => gateway.close());
    // The Gateway replays everything on a resume: the survivor must refuse what the victim recorded.
    gateway.state.replayAll = true;
    const victim = await instances.victim(prefix, channel(gateway.url));
    await until(() => gateway.identifies() === 1 && gateway.open() === 1, 10_000);
    const survivor = await instances.survivor(prefix, channel(gateway.url));
    for (let i = 1; i <= 10; i++) gateway.dispatch({ id: String(i), channel_id: String(i), content: `message ${i}` });
    await until(async () => (await survivor.intake.store.outboxAfter(0, 100)).length === 10, 10_000);
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await until(() => gateway.resumes().length === 1 && gateway.open() === 1, 10_000);
    expect(gateway.resumes()[0]?.d).toMatchObject({ token: BOT_TOKEN, session_id: 'session-1' });
    expect(gateway.identifies()).toBe(1);
    gateway.dispatch({ id: '11', channel_id: '11', content: 'after the takeover' });
    await until(async () => (await survivor.intake.store.outboxAfter(0, 100)).length === 11, 10_000);
    const ids = (await survivor.intake.store.outboxAfter(0, 100)).flatMap((output) => output.messageIds ?? []);
    expect(ids.sort((a, b) => Number(a) - Number(b))).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
      '9',
      '10',
      '11',
    ]);
    expect(survivor.intake.metrics.channelStats().dc?.deduped).toBe(10);
  }, 40_000);
});
