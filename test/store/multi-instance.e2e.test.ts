import { createHash, createHmac } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAbsolute } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureBytes, twoOneBotChannels } from '../fixtures/index.js';
import { postJson, startService, tempDir, until, useTeardown, type Running } from '../support/helpers.js';
import { startIntakeChild } from '../support/child.js';
import { readEvents } from '../support/sse.js';
import { freePort } from '../support/net.js';
import { ManualClock } from '../support/manual-clock.js';
import { PNG, serve } from '../support/servers.js';
import { sharedStoresForTests } from './redis-cluster.js';
import { startRedis } from '../support/redis.js';
import { REAL_TIME_WINDOW } from '../support/windows.js';

/*
 * Several real instances on one real redis-server, and on a real 3-master Redis Cluster (the
 * sharded store, `redis-cluster://`). Every test uses a key prefix of its own, so tests never
 * see each other's claims, buffers or outbox.
 */

const SECRET = 'whsec_' + Buffer.from('agent-shared-secret-0123456789').toString('base64');
const sign = (secret: string, body: Buffer | string) => `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;

const stores = sharedStoresForTests();
let tests = 0;
const { services, children, cleanups } = useTeardown();

const newPrefix = () => `mi${process.pid}-${++tests}`;

/** One instance (in this process) on `store` (the shared redis-server's unless told) under `prefix`, with short windows. */
async function instance(
  prefix: string,
  file: Record<string, unknown> = {},
  options: { clock?: ManualClock; store?: string; outage?: boolean } = {},
): Promise<Running> {
  const service = await startService(
    {
      store: options.store ?? stores.redis(),
      // Where a test stops Redis, the default command timeout (it bounds each 503 while Redis hangs,
      // and it also bounds the ready check of every reconnection: a shorter one can miss on a loaded
      // machine, and each miss backs the reconnection off further); elsewhere one that a loaded
      // machine cannot hit (an admit slower than it answers 503, which those tests do not expect).
      redis: { keyPrefix: prefix, commandTimeoutMs: options.outage ? 1000 : 3000 },
      debounce: { ...REAL_TIME_WINDOW, maxMessages: 10 },
      ...file,
    },
    options.clock ? { clock: options.clock } : {},
  );
  services.push(service);
  return service;
}

const post = (service: Running, body: unknown, channel = 'generic') =>
  postJson(`${service.url}/webhooks/${channel}`, body);

/** Every buffer in the store (any instance's) is committed. */
const drained = (service: Running, timeoutMs = 10_000) => {
  const open = () => service.intake.store.openBuffers();
  return until(
    async () => (await open()) === 0,
    timeoutMs,
    async () => ({ openBuffers: await open() }),
  );
};

/** The cases every shared store form passes: `store` gives its URL once the servers run. */
function describeInstances(name: string, store: () => string): void {
  describe(`several instances on ${name}`, () => {
    // On `store`, unless a test gives a store of its own.
    const on = (prefix: string, file: Record<string, unknown> = {}, options: { clock?: ManualClock } = {}) =>
      instance(prefix, file, { ...options, store: store() });

    it('processes one platform id posted to two instances at once exactly once', async () => {
      const prefix = newPrefix();
      const [a, b] = await Promise.all([on(prefix), on(prefix)]);
      const ids = Array.from({ length: 20 }, (_, i) => `race-${i}`);
      for (const id of ids) {
        const message = { id, sessionKey: `cli:${id}`, sender: { id: 'u' }, content: `hello ${id}` };
        const answers = await Promise.all([post(a, message), post(b, message)]);
        expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
        expect(answers.map((answer) => [answer.body.accepted, answer.body.duplicates]).sort()).toEqual([
          [0, 1],
          [1, 0],
        ]);
      }
      await drained(a);
      const outputs = await a.intake.store.outboxAfter(0, 100);
      expect(outputs.flatMap((output) => output.messageIds).sort()).toEqual([...ids].sort());
      expect(await b.intake.store.lastSeq()).toBe(ids.length);
    });

    it('merges fragments of one session posted to A, B, A into one message, in order', async () => {
      const prefix = newPrefix();
      // The third fragment closes the buffer by count: no window can run out between the posts.
      const rules = { debounce: { windowMs: 10_000, maxWaitMs: 20_000, maxMessages: 3 } };
      const [a, b] = await Promise.all([on(prefix, rules), on(prefix, rules)]);
      const frames = readEvents(`${b.url}/v1/events`, 1, {
        onOpen: async () => {
          for (const [service, id, content] of [
            [a, 'f1', 'check order'],
            [b, 'f2', 'ORD-123'],
            [a, 'f3', 'please'],
          ] as const) {
            expect(
              (await post(service, { id, sessionKey: 'cli:ana', sender: { id: 'ana' }, content })).body.accepted,
            ).toBe(1);
          }
        },
      });
      const [frame] = await frames;
      expect(frame?.data).toMatchObject({
        content: 'check order ORD-123 please',
        messageIds: ['f1', 'f2', 'f3'],
        merged: 3,
        sessionKey: 'cli:ana',
      });
      await drained(a);
      expect(await a.intake.store.lastSeq()).toBe(1);
    });

    it('processes one group message delivered through two OneBot bots on two instances once, listing both bots', async () => {
      const prefix = newPrefix();
      const onebot = twoOneBotChannels;
      const [a, b] = await Promise.all([on(prefix, onebot), on(prefix, onebot)]);
      const napcat = fixtureBytes('onebot', 'napcat-group.json');
      const gocqhttp = fixtureBytes('onebot', 'gocqhttp-group.json');
      const answers = await Promise.all([
        postJson(`${a.url}/webhooks/qq-a`, napcat.toString(), { 'x-signature': sign('secret-a', napcat) }),
        postJson(`${b.url}/webhooks/qq-b`, gocqhttp.toString(), { 'x-signature': sign('secret-b', gocqhttp) }),
      ]);
      expect(answers.map((answer) => answer.status)).toEqual([204, 204]);
      await drained(a);
      const [frame, ...more] = await readEvents(`${a.url}/v1/events?after=0`, 1);
      expect(more).toEqual([]);
      expect(await b.intake.store.lastSeq()).toBe(1);
      expect(frame?.data).toMatchObject({ sessionKey: 'qq:group:123456789', content: '看这个', merged: 1 });
      const bots = (frame?.data.bots as Array<{ channel: string; botId: string }>)
        .map((bot) => `${bot.channel}/${bot.botId}`)
        .sort();
      expect(bots).toEqual(['qq-a/10001000', 'qq-b/20002000']);
      // Each instance saw one of the two deliveries, one of them as the correlated copy.
      const stats = [a, b].map((service) => service.intake.metrics.channelStats());
      expect(stats.map((s) => (s['qq-a']?.correlated ?? 0) + (s['qq-b']?.correlated ?? 0)).sort()).toEqual([0, 1]);
    });

    it("replies through the bot a message @-mentions when that bot's copy, on one OneBot channel, reached another instance than the one that flushes", async () => {
      const prefix = newPrefix();
      // One HTTP channel both bots post to; B's instance runs on a clock that never moves, so A's flushes.
      const onebot = {
        debounce: { windowMs: 1000, maxWaitMs: 3000 },
        channels: [{ id: 'qq', adapter: 'onebot', secret: 'secret-a' }],
      };
      const a = await on(prefix, onebot);
      const b = await on(prefix, onebot, { clock: new ManualClock(Date.now()) });
      // The fixtures @-mention bot B (20002000); A's copy comes first, to instance A, which never hears from B.
      const napcat = fixtureBytes('onebot', 'napcat-group.json');
      const gocqhttp = fixtureBytes('onebot', 'gocqhttp-group.json');
      expect(
        (
          await postJson(`${a.url}/webhooks/qq`, napcat.toString(), {
            'x-signature': sign('secret-a', napcat),
            'x-self-id': '10001000',
          })
        ).status,
      ).toBe(204);
      expect(
        (
          await postJson(`${b.url}/webhooks/qq`, gocqhttp.toString(), {
            'x-signature': sign('secret-a', gocqhttp),
            'x-self-id': '20002000',
          })
        ).status,
      ).toBe(204);
      await drained(a);
      const [frame, ...more] = await readEvents(`${a.url}/v1/events?after=0`, 1);
      expect(more).toEqual([]);
      expect(frame?.data).toMatchObject({
        content: '看这个',
        merged: 1,
        bots: [
          { channel: 'qq', botId: '10001000' },
          { channel: 'qq', botId: '20002000' },
        ],
        mentionedBots: [{ channel: 'qq', botId: '20002000' }],
        replyBot: { channel: 'qq', botId: '20002000' },
      });
      expect(b.intake.metrics.channelStats().qq).toMatchObject({ received: 1, correlated: 1 });
    });

    it('shows an SSE client on A the output that B admitted and B flushed', async () => {
      const prefix = newPrefix();
      // A runs on a clock that never moves: its timers never fire, so it cannot flush anything.
      const a = await on(prefix, {}, { clock: new ManualClock(Date.now()) });
      const b = await on(prefix);
      const [frame] = await readEvents(`${a.url}/v1/events`, 1, {
        onOpen: async () => {
          expect((await post(b, { id: 'via-b', sessionKey: 'cli:bea', content: 'admitted on B' })).body.accepted).toBe(
            1,
          );
        },
      });
      expect(frame).toMatchObject({
        id: expect.stringMatching(/^1@/),
        event: 'chat.processedMessage',
        data: { content: 'admitted on B', messageIds: ['via-b'] },
      });
      // The stream can show the record (the store's tail) before B's flush has counted it.
      await until(() => b.intake.metrics.channelStats().generic?.emitted === 1);
      expect(b.intake.metrics.channelStats().generic).toMatchObject({ emitted: 1 });
      expect(a.intake.metrics.channelStats().generic?.emitted ?? 0).toBe(0);
    });

    it('loses nothing and emits nothing twice when an instance is killed with open buffers and a push in flight', async () => {
      const prefix = newPrefix();
      const agent = await fakeAgent((content) => content === '/held');
      cleanups.push(() => agent.close());
      const port = await freePort();
      const dir = tempDir();
      cleanups.push(() => dir.remove());
      // The victim's push lease is 3 s (agent.timeoutMs x 2 + 5 s = 8 s by default): the survivor
      // retakes the held push after it. Its flush lease is 2 s (30 s by default), should it be
      // killed mid-flush on a slow machine.
      const victim = await startIntakeChild(dir.path, port, {
        configFile: {
          store: store(),
          redis: { keyPrefix: prefix },
          logLevel: 'warn',
          agent: { url: agent.url, secret: SECRET, timeoutMs: 1500 },
          debounce: { windowMs: 1500, maxWaitMs: 5000, maxMessages: 10 },
        },
        pushLeaseMs: 3000,
        flushLeaseMs: 2000,
      });
      children.push(victim);
      const victimUrl = `http://127.0.0.1:${port}`;
      // A command closes its buffer at once: the victim flushes it and pushes; the agent holds the request.
      expect(
        (await postJson(`${victimUrl}/webhooks/generic`, { id: 'h1', sessionKey: 'cli:held', content: '/held' }))
          .status,
      ).toBe(200);
      await agent.holding;
      const survivor = await on(prefix, {
        debounce: { windowMs: 1500, maxWaitMs: 5000, maxMessages: 10 },
        agent: { url: agent.url, secret: SECRET, timeoutMs: 1500, minBackoffMs: 50, maxBackoffMs: 500 },
      });
      // Open buffers on the victim, then kill -9 before their window runs out.
      for (const [id, sessionKey, content] of [
        ['s1a', 'cli:s1', 'one'],
        ['s1b', 'cli:s1', 'two'],
        ['s2a', 'cli:s2', 'uno'],
        ['s2b', 'cli:s2', 'dos'],
      ]) {
        expect((await postJson(`${victimUrl}/webhooks/generic`, { id, sessionKey, content })).body.accepted).toBe(1);
      }
      victim.kill('SIGKILL');
      await once(victim, 'exit');

      // No further message of those sessions arrives: the survivor's poll finds them due.
      const frames = await readEvents(`${survivor.url}/v1/events?after=0`, 3, { timeoutMs: 10_000 });
      expect(frames.map((f) => [f.data.sessionKey, f.data.content]).sort()).toEqual([
        ['cli:held', '/held'],
        ['cli:s1', 'one two'],
        ['cli:s2', 'uno dos'],
      ]);
      expect(frames.flatMap((f) => f.data.messageIds as string[]).sort()).toEqual(['h1', 's1a', 's1b', 's2a', 's2b']);
      // The survivor delivers everything, the held push once the victim's lease ran out.
      await until(() => ['/held', 'one two', 'uno dos'].every((content) => agent.delivered.has(content)), 15_000);
      await drained(survivor);
      expect(await survivor.intake.store.lastSeq()).toBe(3);
      // Each content went out under one webhook-id; only the push in flight at the kill was
      // received twice (the victim's attempt, then the survivor's), with the same webhook-id.
      const byContent = new Map<string, string[]>();
      for (const { content, webhookId } of agent.received)
        byContent.set(content, [...(byContent.get(content) ?? []), webhookId]);
      for (const [content, webhookIds] of byContent) {
        expect(new Set(webhookIds).size).toBe(1);
        expect(webhookIds.length).toBe(content === '/held' ? 2 : 1);
      }
      const outputIds = frames.map((f) => f.data.id as string).sort();
      expect([...byContent.values()].map((webhookIds) => webhookIds[0]).sort()).toEqual(outputIds);
      expect(await survivor.intake.store.deliveryCounts()).toEqual({ pending: 0, dead: 0 });
    }, 30_000);
  });
}

for (const [name, url] of stores.forms) describeInstances(name, url);

describe('several instances on one Redis, through its outages', () => {
  it('refuses ingest with 503 while Redis is away and, once it is back, emits every acknowledged message once', async () => {
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    // Acknowledged means fsynced: AOF with appendfsync always, in a data dir of its own.
    const durable = await startRedis({ dir: dir.path, args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    cleanups.push(() => durable.stop());
    const prefix = newPrefix();
    const rules = { debounce: { ...REAL_TIME_WINDOW, maxMessages: 3 } };
    const [a, b] = await Promise.all([
      instance(prefix, rules, { store: durable.url, outage: true }),
      instance(prefix, rules, { store: durable.url, outage: true }),
    ]);

    const acked = new Set<string>();
    const refused: string[] = [];
    const refusals: Array<{ status: number; code: string; retryAfter: string | null }> = [];
    let sent = 0;
    let running = true;
    const traffic = (async () => {
      while (running) {
        const n = ++sent;
        const id = `m${n}`;
        const answer = await post(n % 2 ? a : b, { id, sessionKey: `cli:s${n % 5}`, content: id });
        if (answer.status === 200) acked.add(id);
        else {
          refused.push(id);
          refusals.push({
            status: answer.status,
            code: answer.body?.error?.code,
            retryAfter: answer.headers.get('retry-after'),
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const readiness = async () =>
      Promise.all([a, b].map(async (s) => (await (await fetch(`${s.url}/readyz`)).json()) as unknown));
    const seen = async () => ({
      sent,
      acked: acked.size,
      refused: refused.length,
      lastRefusal: refusals.at(-1),
      readiness: await readiness(),
    });
    const refusedSoFar = refused.length;
    await until(() => acked.size >= 20, 10_000, seen);

    // A hung server (SIGSTOP): connections stay open and nothing answers. Ingest does not hang:
    // the admit connection's command timeout turns it into a 503.
    durable.freeze();
    await until(() => refused.length >= refusedSoFar + 3, 10_000, seen);
    expect((await fetch(`${a.url}/readyz`)).status).toBe(503);
    durable.thaw();

    // A dead server (kill -9) restarted on the same port from its AOF.
    await until(() => acked.size >= 30, 20_000, seen);
    const beforeStop = refused.length;
    await durable.stop();
    await until(() => refused.length >= beforeStop + 3, 10_000, seen);
    const ready = await fetch(`${b.url}/readyz`);
    expect(ready.status).toBe(503);
    await durable.restart();
    const ackedAtRestart = acked.size;
    // Reconnection backs off (up to 2 s between attempts): give it time on a loaded machine.
    await until(() => acked.size >= ackedAtRestart + 20, 30_000, seen);
    running = false;
    await traffic;

    expect(refusals.length).toBeGreaterThanOrEqual(6);
    for (const refusal of refusals)
      expect(refusal).toEqual({ status: 503, code: 'store_unavailable', retryAfter: expect.stringMatching(/^\d+$/) });
    // The platform retries what was refused: each is accepted now, or a duplicate (a timed-out
    // admit that Redis ran after all); either way it comes out once.
    for (const id of refused) {
      const retry = await post(a, { id, sessionKey: `cli:s${Number(id.slice(1)) % 5}`, content: id });
      expect(retry.status).toBe(200);
    }
    // A claim of due buffers sent while Redis was frozen can run after the thaw, past the
    // client's timeout (or run just before the kill): its answer is lost, and its instance gives
    // those buffers back before its next claim. The bound is loose on purpose (a loaded machine;
    // a claim lost past what the instance remembers would wait out its 30 s lease).
    await drained(a, 45_000);
    const outputs = await b.intake.store.outboxAfter(0, 10_000);
    const emitted = outputs.flatMap((output) => output.messageIds);
    expect(emitted.length).toBe(new Set(emitted).size);
    expect(emitted.sort()).toEqual(Array.from({ length: sent }, (_, i) => `m${i + 1}`).sort());
    expect([...acked].every((id) => emitted.includes(id))).toBe(true);
    expect((await fetch(`${a.url}/readyz`)).status).toBe(200);
  }, 90_000);

  it('flushes a batch whose commit failed in a Redis outage soon after Redis is back, not after its 30 s lease', async () => {
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    const durable = await startRedis({ dir: dir.path, args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    cleanups.push(() => durable.stop());
    // The attachment is held until Redis is gone: the flush is leased and waits for it.
    let heldResponse: ServerResponse | undefined;
    const host = await serve((_req, res, hits) => {
      if (hits === 1) heldResponse = res;
      else res.end(PNG);
    });
    cleanups.push(() => host.close());
    const service = await instance(
      newPrefix(),
      { media: { allowHosts: [`127.0.0.1:${host.port}`], retries: 0 } },
      { store: durable.url, outage: true },
    );
    const stats = async () =>
      (await (await fetch(`${service.url}/v1/stats`)).json()) as { debounce: { flushing: number } };
    await post(service, {
      id: 'pic',
      sessionKey: 'cli:pic',
      content: 'look',
      mediaUrl: `http://127.0.0.1:${host.port}/a.png`,
    });
    await until(async () => (await stats()).debounce.flushing === 1);
    await durable.stop();
    heldResponse?.setHeader('content-type', 'application/octet-stream');
    heldResponse?.end(PNG);
    // The commit fails; so does giving the lease back, until Redis returns.
    await until(async () =>
      /inbox_store_errors_total\{op="flush"\} [1-9]/.test(await (await fetch(`${service.url}/metrics`)).text()),
    );
    await durable.restart();
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1, { timeoutMs: 10_000 });
    expect(frame?.data).toMatchObject({ content: 'look', messageIds: ['pic'] });
    expect(frame?.data.media).toHaveLength(1);
  });
});

describe('media with several instances', () => {
  it("gives B's output a file that exists when B flushes a part A admitted while A was still downloading", async () => {
    const prefix = newPrefix();
    const shared = tempDir('intake-shared-media-');
    cleanups.push(() => shared.remove());
    // The first request for the image (A's) is held open; later ones are answered.
    let heldResponse: ServerResponse | undefined;
    const host = await serve((_req, res, hits) => {
      if (hits === 1) heldResponse = res;
      else {
        res.setHeader('content-type', 'application/octet-stream');
        res.end(PNG);
      }
    });
    cleanups.push(() => host.close());
    const media = { dir: shared.path, allowHosts: [`127.0.0.1:${host.port}`], timeoutMs: 10_000, retries: 0 };
    // A never flushes (its clock stands still); B polls the store and flushes when due.
    const a = await instance(prefix, { media }, { clock: new ManualClock(Date.now()) });
    const b = await instance(prefix, { media });
    const [frame] = await readEvents(`${b.url}/v1/events`, 1, {
      timeoutMs: 8000,
      onOpen: async () => {
        expect(
          (
            await post(a, {
              id: 'pic',
              sessionKey: 'cli:pic',
              content: 'look',
              mediaUrl: `http://127.0.0.1:${host.port}/a.png`,
            })
          ).body.accepted,
        ).toBe(1);
        await host.arrived('/a.png', 1); // A's download is in progress
      },
    });
    heldResponse?.destroy();
    const [item] = frame?.data.media as Array<{ path: string; sha256: string; bytes: number }>;
    expect(frame?.data.mediaErrors).toEqual([]);
    // media.dir is outside every instance's working directory: the path is absolute, the same for
    // every consumer mounting the shared volume at the same place.
    expect(isAbsolute(item!.path)).toBe(true);
    expect(item!.path.startsWith(shared.path)).toBe(true);
    expect(existsSync(item!.path)).toBe(true);
    expect(createHash('sha256').update(readFileSync(item!.path)).digest('hex')).toBe(item!.sha256);
    // The stream can show the record (the store's tail) before B's flush has counted it.
    await until(() => b.intake.metrics.channelStats().generic?.emitted === 1);
    expect(b.intake.metrics.channelStats().generic).toMatchObject({ emitted: 1 });
    // B downloaded it again itself (A's copy was still in progress).
    expect(host.hits.get('/a.png')).toBe(2);
  });
});

interface FakeAgent {
  url: string;
  received: Array<{ content: string; webhookId: string }>;
  /** Contents answered 2xx. */
  delivered: Set<string>;
  /** Resolves once the first request to hold has arrived. */
  holding: Promise<void>;
  close(): Promise<void>;
}

/** An agent on loopback that records every push and holds the first one `hold` picks until it is closed. */
async function fakeAgent(hold: (content: string) => boolean): Promise<FakeAgent> {
  const received: FakeAgent['received'] = [];
  const delivered = new Set<string>();
  let held = false;
  let arrived!: () => void;
  const holding = new Promise<void>((resolve) => (arrived = resolve));
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const content = String(JSON.parse(body).content);
      received.push({ content, webhookId: String(req.headers['webhook-id']) });
      if (!held && hold(content)) {
        held = true;
        arrived();
        return; // never answered: the pusher dies with it in flight
      }
      delivered.add(content);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/inbox`,
    received,
    delivered,
    holding,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
