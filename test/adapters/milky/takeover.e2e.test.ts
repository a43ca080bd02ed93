import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { until } from '../../support/helpers.js';
import { takeoverInstances } from '../../connections/takeover.js';
import { fakeMilky, groupMessage, text } from './fake-milky.js';

/*
 * Two instances on one real redis-server share one Milky channel: the holder of its event
 * socket (the channel's lease), in a child process, is killed with SIGKILL; the survivor dials
 * once the lease runs out. What the holder recorded is emitted once, what comes after the
 * takeover is not lost, and never are two sockets open at once.
 */

const instances = takeoverInstances();
const SELF = 10001;

const channel = (url: string) => ({
  id: 'milky',
  adapter: 'milky',
  url,
  accessToken: 'tok',
  leaseMs: 1500,
  reconnectMinMs: 20,
  reconnectMaxMs: 200,
});

describe('a Milky event socket on several instances', () => {
  it('is taken over by a survivor when its holder is killed (kill -9): nothing twice, nothing after it lost', async () => {
    const prefix = `mk${process.pid}${Math.floor(Math.random() * 1e6)}`;
    const milky = await fakeMilky({ selfId: SELF, token: 'tok' });
    instances.cleanup(() => milky.close());
    const victim = await instances.victim(prefix, channel(milky.url));
    await until(() => milky.open === 1, 10_000);
    const survivor = await instances.survivor(prefix, channel(milky.url));
    const outputs = async () =>
      (await survivor.intake.store.outboxAfter(0, 100)).flatMap((output) => output.messageIds ?? []);
    // One sender each: one output each.
    for (let seq = 1; seq <= 3; seq++) milky.event('message_receive', groupMessage(seq, [text(`m${seq}`)], 700 + seq));
    await until(async () => (await outputs()).length === 3, 10_000);
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    // The survivor's own socket, once the victim's lease ran out and its socket is gone.
    await until(() => milky.handshakes.length === 2 && milky.open === 1, 15_000);
    milky.event('message_receive', groupMessage(4, [text('m4')], 704));
    await until(async () => (await outputs()).length === 4, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a second copy would show by now
    expect((await outputs()).sort()).toEqual([1, 2, 3, 4].map((seq) => `${SELF}:group:123456:${seq}`));
    expect(milky.state.mostAtOnce).toBe(1);
  }, 40_000);
});
