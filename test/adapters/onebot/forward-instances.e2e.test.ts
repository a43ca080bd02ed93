import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { postJson, startService, tempDir, until, useTeardown, type Running } from '../../support/helpers.js';
import { freePort } from '../../support/net.js';
import { startIntakeChild } from '../../support/child.js';
import { useRedis } from '../../support/redis.js';
import { forwardBot, groupMessage } from '../../connections/forward-bot.js';
import { REAL_TIME_WINDOW } from '../../support/windows.js';

/*
 * Several instances on one real redis-server share one forward OneBot channel: exactly one
 * holds the bot's socket (the channel's lease), the others relay actions to it and list it.
 */

const BOT = 10001000;
/** The killed holder's flush lease. */
const FLUSH_LEASE_MS = 2000;
const redis = useRedis();
let tests = 0;
const { services, children, cleanups } = useTeardown();

const channel = (url: string) => ({
  id: 'qq-fwd',
  adapter: 'onebot',
  transport: 'ws',
  url,
  accessToken: 'tok',
  leaseMs: 900,
  reconnectMinMs: 20,
  reconnectMaxMs: 200,
  actionTimeoutMs: 2000,
});

async function instance(prefix: string, url: string): Promise<Running> {
  const service = await startService({
    store: redis.url,
    redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
    debounce: { ...REAL_TIME_WINDOW, maxMessages: 10 },
    channels: [channel(url)],
  });
  services.push(service);
  return service;
}

async function bot() {
  const fake = await forwardBot({ selfId: BOT, token: 'tok' });
  cleanups.push(() => fake.close());
  return fake;
}

const listed = async (service: Running) =>
  ((await (await fetch(`${service.url}/v1/connections`)).json()) as { connections: Array<Record<string, unknown>> })
    .connections;
describe('a forward OneBot channel on several instances', () => {
  it('is dialled by exactly one instance; every instance lists it and relays actions to it; a stopped holder hands it over', async () => {
    const prefix = `fwd${process.pid}-${++tests}`;
    const fake = await bot();
    const [a, b] = await Promise.all([instance(prefix, fake.url), instance(prefix, fake.url)]);
    await until(() => fake.open === 1);
    await until(
      async () =>
        (await listed(a)).length === 1 && (await listed(b)).length === 1 && (await listed(b))[0]?.botId === String(BOT),
    );
    // Each instance publishes what it holds within moments of a change: both lists agree.
    await until(async () => JSON.stringify(await listed(a)) === JSON.stringify(await listed(b)));
    const [onA] = await listed(a);
    expect(onA).toMatchObject({ channel: 'qq-fwd', transport: 'ws', state: 'open', botId: String(BOT) });
    const [holder, other] = onA?.instance === a.intake.instance ? [a, b] : [b, a];
    expect(onA?.instance).toBe(holder.intake.instance);
    expect(holder.intake.instance).not.toBe(other.intake.instance);

    // An action asked of the instance without the socket is relayed to the holder's.
    const answer = await postJson(`${other.url}/v1/channels/qq-fwd/actions/send_group_msg`, {
      group_id: 1,
      message: 'via relay',
    });
    expect(answer).toMatchObject({
      status: 200,
      body: { status: 'ok', retcode: 0, data: { message_id: 7, via: BOT } },
    });
    expect(fake.actions.at(-1)).toMatchObject({
      action: 'send_group_msg',
      params: { group_id: 1, message: 'via relay' },
    });
    const missing = await postJson(`${other.url}/v1/channels/qq-fwd/actions/send_group_msg?self_id=5`, {});
    expect(missing).toMatchObject({ status: 404, body: { error: { code: 'bot_not_connected' } } });
    expect(missing.body.error.message).toMatch(/connected: 10001000/);

    // A graceful stop gives the lease back: the other instance dials at its next ask.
    const before = fake.state.connections;
    services.splice(services.indexOf(holder), 1);
    await holder.stop();
    await until(() => fake.state.connections === before + 1 && fake.open === 1, 10_000);
    await until(async () =>
      (await listed(other)).some((view) => view.state === 'open' && view.instance === other.intake.instance),
    );
    expect(fake.state.mostAtOnce).toBe(1);
  }, 30_000);

  it('is taken over by a survivor when its holder is killed (kill -9), and no event is recorded twice', async () => {
    const prefix = `fwd${process.pid}-${++tests}`;
    const fake = await bot();
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    // A flush the victim has under way when it dies holds its session until its lease runs out:
    // 2 s here (30 s by default).
    const victim = await startIntakeChild(dir.path, await freePort(), {
      configFile: {
        store: redis.url,
        redis: { keyPrefix: prefix },
        debounce: REAL_TIME_WINDOW,
        logLevel: 'warn',
        channels: [channel(fake.url)],
      },
      flushLeaseMs: FLUSH_LEASE_MS,
    });
    children.push(victim);
    await until(() => fake.open === 1, 10_000);
    const survivor = await instance(prefix, fake.url);
    // Events keep coming, each a session of its own: some to the victim, then (after a gap no
    // socket is open in, whose events the bot cannot deliver) to the survivor.
    let sent = 0;
    let delivered = 0;
    const pump = setInterval(() => {
      sent++;
      delivered += fake.send(groupMessage(BOT, 70_000 + sent, `event ${sent}`, 9000 + sent));
    }, 10);
    cleanups.push(() => clearInterval(pump));
    await until(() => delivered >= 20);
    const connectionsBefore = fake.state.connections;
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await until(() => fake.state.connections === connectionsBefore + 1 && fake.open === 1, 10_000);
    const atTakeover = delivered;
    await until(() => delivered >= atTakeover + 20);
    clearInterval(pump);
    // A flush the victim had under way when it died is taken over once its lease runs out.
    await until(async () => (await survivor.intake.store.openBuffers()) === 0, FLUSH_LEASE_MS + 10_000);

    expect(fake.state.mostAtOnce).toBe(1);
    const outputs = await survivor.intake.store.outboxAfter(0, 10_000);
    const ids = outputs.flatMap((output) => output.messageIds ?? []);
    // Nothing twice; everything the survivor read is there, and what the victim recorded before it died.
    expect(new Set(ids).size).toBe(ids.length);
    const read = survivor.intake.metrics.channelStats()['qq-fwd']?.received ?? 0;
    expect(read).toBeGreaterThanOrEqual(20);
    expect(ids.length).toBeGreaterThan(read);
    expect(ids.length).toBeLessThanOrEqual(delivered);
    // The victim's published connection leaves the list once it expires (it published it for 6 s).
    await until(async () => (await listed(survivor)).length === 1, 10_000);
    expect((await listed(survivor))[0]).toMatchObject({ state: 'open', instance: survivor.intake.instance });
  }, 40_000);
});
