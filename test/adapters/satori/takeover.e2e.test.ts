import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { until } from '../../support/helpers.js';
import { takeoverInstances } from '../../connections/takeover.js';
import { fakeSatori, satoriMessage, TOKEN } from './fake-satori.js';

/*
 * Two instances on one real redis-server share one Satori channel: the holder of its event
 * socket (the channel's lease), in a child process, is killed with SIGKILL; the survivor dials
 * once the lease runs out and identifies with the sn the holder kept in the store. What came
 * while no one held the socket is replayed after that sn: nothing recorded is emitted twice,
 * nothing is lost, and never are two sockets open at once.
 */

const instances = takeoverInstances();

const channel = (url: string) => ({
  id: 'sat',
  adapter: 'satori',
  url,
  token: TOKEN,
  namespaces: { onebot: 'qq' },
  leaseMs: 1500,
  reconnectMinMs: 20,
  reconnectMaxMs: 200,
});

/** A message in its own direct chat: one output each. */
const message = (n: number) => satoriMessage(`s-${n}`, `message ${n}`, { user: `70${n}`, direct: true });

describe('a Satori event socket on several instances', () => {
  it('is taken over by a survivor when its holder is killed (kill -9), which resumes from the kept sn: nothing twice, nothing lost', async () => {
    const prefix = `st${process.pid}${Math.floor(Math.random() * 1e6)}`;
    const satori = await fakeSatori();
    instances.cleanup(() => satori.close());
    const victim = await instances.victim(prefix, channel(satori.url));
    await until(() => satori.open() === 1, 10_000);
    const survivor = await instances.survivor(prefix, channel(satori.url));
    const outputs = async () =>
      (await survivor.intake.store.outboxAfter(0, 100)).flatMap((output) => output.messageIds ?? []);
    for (let n = 1; n <= 3; n++) satori.event(message(n));
    await until(async () => (await outputs()).length === 3, 10_000);
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await until(() => satori.open() === 0, 10_000);
    // Sent while no instance holds the socket: the survivor's resume brings it.
    satori.event(message(4));
    await until(() => satori.identifies.length === 2 && satori.open() === 1, 15_000);
    expect(satori.identifies[1]).toEqual({ token: TOKEN, sn: 3 });
    satori.event(message(5));
    await until(async () => (await outputs()).length === 5, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a second copy would show by now
    expect((await outputs()).sort()).toEqual([1, 2, 3, 4, 5].map((n) => `onebot:10001:private:70${n}:s-${n}`));
    expect(satori.state.mostAtOnce).toBe(1);
  }, 40_000);
});
