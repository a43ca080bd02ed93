import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import type { PlatformReply } from '../../src/events/transport.js';
import { fixtureBytes } from '../fixtures/index.js';
import { tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';
import { sharedStoresForTests } from '../store/redis-cluster.js';

/*
 * Admission in batches: the deliveries that reach admission in one turn of the event loop go to
 * the store in one `admit` call, on every store; each is answered with its own verdicts, and a
 * delivery refused before admission is answered on its own.
 */

const shared = sharedStoresForTests();
const stores: Array<[string, (dir: string) => Record<string, unknown>]> = [
  ['the memory store', () => ({ store: 'memory' })],
  ['the SQLite store', (dir) => ({ store: `sqlite:${join(dir, 'intake.db')}` })],
  ['one Redis', () => ({ store: shared.redis(), redis: { keyPrefix: prefix() } })],
  ['a 3-master Redis Cluster', () => ({ store: shared.cluster(), redis: { keyPrefix: prefix() } })],
];
const prefix = () => `batch${process.pid}${Math.floor(Math.random() * 1e9)}:`;
const sign = (secret: string, body: Buffer) => `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;

const running: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((stop) => stop()));
});

async function intakeOn(store: (dir: string) => Record<string, unknown>, file: Record<string, unknown> = {}) {
  const dir = tempDir();
  const clock = new ManualClock();
  const config = loadConfig({
    env: {},
    cwd: dir.path,
    file: { ...store(dir.path), logLevel: 'silent', media: { dir: 'media' }, debounce: { windowMs: 1000 }, ...file },
  });
  const intake: Intake = await createIntake({ config, logger: silent, cwd: dir.path, clock });
  running.push(async () => {
    await intake.close();
    dir.remove();
  });
  const admits = vi.spyOn(intake.store, 'admit');
  const post = (channel: string, body: Buffer, headers: Record<string, string> = {}): Promise<PlatformReply> =>
    intake.ingest(channel, {
      headers: { 'content-type': 'application/json', ...headers },
      query: new URLSearchParams(),
      now: clock.now(),
      body,
    });
  const send = (body: Record<string, unknown>) => post('generic', Buffer.from(JSON.stringify(body)));
  return { intake, admits, post, send };
}

const message = (id: string, sender: string, content: string, sessionKey = `cli:${sender}`) => ({
  id,
  sessionKey,
  sender: { id: sender },
  content,
});

describe.each(stores)('admission in batches on %s', (_name, store) => {
  it('records the deliveries of one turn in one store call, answering a bad one and a denied one on their own', async () => {
    const { intake, admits, send } = await intakeOn(store, { access: { deny: ['generic:spammer'] } });
    // Warm up: the backlog count and the store's scripts are read once, before the batch.
    await send(message('m0', 'u0', 'warm up'));
    admits.mockClear();
    const answers = await Promise.allSettled([
      send(message('m1', 'u1', 'first')),
      send({ id: 'm2', sender: { id: 'u2' }, content: 'no session key' }),
      send(message('m3', 'spammer', 'buy followers')),
      send(message('m4', 'u4', 'second')),
      send(message('m5', 'u5', 'third', 'cli:u1')),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    const bodies = answers.map((answer) => (answer.status === 'fulfilled' ? answer.value.body : undefined));
    expect(bodies).toEqual([
      { accepted: 1, duplicates: 0, events: [{ id: 'm1', verdict: 'accepted' }] },
      undefined,
      { accepted: 0, duplicates: 0, events: [{ id: 'm3', verdict: 'ignored' }] },
      { accepted: 1, duplicates: 0, events: [{ id: 'm4', verdict: 'accepted' }] },
      { accepted: 1, duplicates: 0, events: [{ id: 'm5', verdict: 'accepted' }] },
    ]);
    expect((answers[1] as PromiseRejectedResult).reason).toMatchObject({ status: 400 });
    // One call for the three admitted deliveries; the bad and the denied never reached it.
    expect(admits).toHaveBeenCalledTimes(1);
    expect(admits.mock.calls[0]![0].map((item) => item.part.event.platformId)).toEqual(['m1', 'm4', 'm5']);
    expect(await intake.store.openBuffers()).toBe(4); // u0, u1 (m1 and m5), u4 and u5's own sender buffer
  });

  it('admits the same message id twice in one turn once, the other a duplicate', async () => {
    const { admits, send } = await intakeOn(store);
    await send(message('m0', 'u0', 'warm up'));
    admits.mockClear();
    const answers = await Promise.all([
      send(message('m1', 'u1', 'hello')),
      send(message('m1', 'u1', 'hello')),
      send(message('m2', 'u1', 'again')),
    ]);
    expect(answers.map((answer) => answer.body)).toEqual([
      { accepted: 1, duplicates: 0, events: [{ id: 'm1', verdict: 'accepted' }] },
      { accepted: 0, duplicates: 1, events: [{ id: 'm1', verdict: 'duplicate' }] },
      { accepted: 1, duplicates: 0, events: [{ id: 'm2', verdict: 'accepted' }] },
    ]);
    expect(admits).toHaveBeenCalledTimes(1);
  });

  it("correlates two bots' copies of one message delivered in the same turn", async () => {
    const { intake, admits, post } = await intakeOn(store, {
      channels: [
        { id: 'generic', adapter: 'generic' },
        { id: 'qq-a', adapter: 'onebot', secret: 'secret-a', namespace: 'qq' },
        { id: 'qq-b', adapter: 'onebot', secret: 'secret-b', namespace: 'qq' },
      ],
    });
    const napcat = fixtureBytes('onebot', 'napcat-group.json');
    const gocqhttp = fixtureBytes('onebot', 'gocqhttp-group.json');
    const pair = (a: Buffer, b: Buffer) =>
      Promise.all([
        post('qq-a', a, { 'x-signature': sign('secret-a', a) }),
        post('qq-b', b, { 'x-signature': sign('secret-b', b) }),
      ]);
    // Warm up: each bot's first delivery (its identity, the backlog count) in another group.
    const elsewhere = (body: Buffer) => Buffer.from(body.toString().replaceAll('123456789', '987654321'));
    await pair(elsewhere(napcat), elsewhere(gocqhttp));
    admits.mockClear();
    const answers = await pair(napcat, gocqhttp);
    expect(answers.map((answer) => answer.status)).toEqual([204, 204]);
    expect(admits).toHaveBeenCalledTimes(1);
    expect(admits.mock.calls[0]![0].map((item) => item.correlation?.delivery.channel).sort()).toEqual(['qq-a', 'qq-b']);
    // Whichever reached admission first was accepted, the other correlated to it: one of each
    // per pair (the warm-up's and this one's).
    const scrape = await intake.metrics.scrape();
    const total = (action: string) =>
      [...scrape.matchAll(new RegExp(`adapter="onebot",action="${action}"\\} (\\d+)`, 'g'))].reduce(
        (sum, [, n]) => sum + Number(n),
        0,
      );
    expect([total('correlated'), total('deduped')]).toEqual([2, 0]);
    expect(await intake.store.openBuffers()).toBe(2);
  });
});
