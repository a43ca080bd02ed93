import { createHmac } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureBytes, twoOneBotChannels } from '../fixtures/index.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { readEvents } from '../support/sse.js';
import { serve } from '../support/servers.js';
import { sharedStoresForTests } from '../store/redis-cluster.js';
import { REAL_TIME_WINDOW } from '../support/windows.js';

/*
 * The trail on Redis: two instances on one real redis-server (and on a real 3-master Redis
 * Cluster), each asked about what the other one saw.
 */

const stores = sharedStoresForTests();
/** The store of the cases running now. */
let store = stores.redis;
let tests = 0;
const services: Running[] = [];

afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.stop()));
});

async function instance(prefix: string, file: Record<string, unknown> = {}): Promise<Running> {
  const service = await startService({
    store: store(),
    redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
    debounce: { ...REAL_TIME_WINDOW, maxMessages: 10 },
    ...file,
  });
  services.push(service);
  return service;
}

const getJson = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as any };
};
const drained = (service: Running) => until(async () => (await service.intake.store.openBuffers()) === 0, 10_000);
const SECRET = 'whsec_' + Buffer.from('trace-agent-secret-0123456789ab').toString('base64');
const sign = (secret: string, body: Buffer) => `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;

describe.each(stores.forms)('the trail on %s, read from any instance', (_name, url) => {
  beforeAll(() => {
    store = url;
  });

  it("traces on B a message posted to A by platform id, ingest id and output id, with A's arrival, the verdict, the output and its push attempts", async () => {
    const prefix = `tr${process.pid}-${++tests}`;
    // The agent refuses the first push and takes the second.
    const agent = await serve((_req, res, hits) => {
      res.statusCode = hits === 1 ? 503 : 200;
      res.end();
    });
    const pushing = {
      agent: {
        url: `http://127.0.0.1:${agent.port}/agent`,
        secret: SECRET,
        timeoutMs: 1500,
        minBackoffMs: 50,
        maxBackoffMs: 100,
      },
    };
    const [a, b] = await Promise.all([instance(prefix, pushing), instance(prefix, pushing)]);
    expect(a.intake.instance).not.toBe(b.intake.instance);
    const answer = await postJson(`${a.url}/webhooks/generic`, {
      id: 'pm-1',
      sessionKey: 'cli:tr',
      sender: { id: 'u' },
      content: 'hello from A',
    });
    expect(answer.status).toBe(200);
    const ingestId = answer.body.events[0].id as string;
    await drained(a);
    const output = (await a.intake.store.outboxAfter(0, 10))[0]!;

    // The trail is written after the answer, in the background: B finds it once it is there.
    await until(
      async () => (await getJson(`${b.url}/v1/trace/${output.id}`)).body.attempts?.length === 2,
      10_000,
      async () => JSON.stringify((await getJson(`${b.url}/v1/trace/${output.id}`)).body),
    );
    for (const id of ['pm-1', ingestId, output.id]) {
      const { status, body } = await getJson(`${b.url}/v1/trace/${encodeURIComponent(id)}`);
      expect(status).toBe(200);
      expect(body.arrivals).toHaveLength(1);
      expect(body.arrivals[0]).toMatchObject({
        instance: a.intake.instance,
        channel: 'generic',
        platformId: 'pm-1',
        id: ingestId,
        verdict: 'accepted',
      });
      expect(body.outputs).toHaveLength(1);
      expect(body.outputs[0]).toMatchObject({
        id: output.id,
        messageIds: ['pm-1'],
        retained: true,
        delivery: { state: 'delivered', attempts: 2 },
      });
      expect(body.attempts.map((attempt: any) => [attempt.state, attempt.attempts])).toEqual([
        ['pending', 1],
        ['delivered', 2],
      ]);
      expect(
        body.attempts.every((attempt: any) => [a.intake.instance, b.intake.instance].includes(attempt.instance)),
      ).toBe(true);
    }
    await agent.close();
    // An id no instance saw: the 404 says whose trail was asked.
    const unknown = await getJson(`${b.url}/v1/trace/never-seen`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toMatch(/seen by any instance on this store/);
  });

  it('traces on A a correlated copy that B admitted, with the bot of each arrival and the output it joined', async () => {
    const prefix = `tr${process.pid}-${++tests}`;
    const onebot = twoOneBotChannels;
    const [a, b] = await Promise.all([instance(prefix, onebot), instance(prefix, onebot)]);
    const napcat = fixtureBytes('onebot', 'napcat-group.json');
    const gocqhttp = fixtureBytes('onebot', 'gocqhttp-group.json');
    expect(
      (await postJson(`${a.url}/webhooks/qq-a`, napcat.toString(), { 'x-signature': sign('secret-a', napcat) })).status,
    ).toBe(204);
    expect(
      (await postJson(`${b.url}/webhooks/qq-b`, gocqhttp.toString(), { 'x-signature': sign('secret-b', gocqhttp) }))
        .status,
    ).toBe(204);
    await drained(a);
    const [output] = await a.intake.store.outboxAfter(0, 10);

    // The copy is B's delivery through bot 20002000 (its platform id is the message_id that bot gave).
    await until(async () => (await getJson(`${a.url}/v1/trace/884213`)).body.outputs?.length === 1);
    const { body } = await getJson(`${a.url}/v1/trace/884213`);
    const arrivals = body.arrivals.map((arrival: any) => [
      arrival.instance,
      arrival.channel,
      arrival.bot,
      arrival.verdict,
    ]);
    expect(arrivals).toEqual([
      [a.intake.instance, 'qq-a', '10001000', 'accepted'],
      [b.intake.instance, 'qq-b', '20002000', 'correlated'],
    ]);
    expect(body.outputs.map((joined: any) => joined.id)).toEqual([output!.id]);
    // Each arrival's ingest id leads to the same output, on either instance.
    for (const arrival of body.arrivals) {
      for (const service of [a, b]) {
        const byIngestId = (await getJson(`${service.url}/v1/trace/${encodeURIComponent(arrival.id)}`)).body;
        expect(byIngestId.outputs.map((joined: any) => joined.id)).toEqual([output!.id]);
      }
    }
  });

  it('traces on A a double send that B took for a fuzzy duplicate to the message it repeats, which A admitted, and its output', async () => {
    const prefix = `tr${process.pid}-${++tests}`;
    const [a, b] = await Promise.all([instance(prefix), instance(prefix)]);
    const message = { sessionKey: 'cli:fz', sender: { id: 'u' }, content: 'send it twice' };
    const first = (await postJson(`${a.url}/webhooks/generic`, message)).body.events[0];
    const double = (await postJson(`${b.url}/webhooks/generic`, message)).body.events[0];
    expect([first.verdict, double.verdict]).toEqual(['accepted', 'fuzzy_duplicate']);
    await drained(a);
    const [output] = await a.intake.store.outboxAfter(0, 10);
    await until(async () => (await getJson(`${a.url}/v1/trace/${double.id}`)).body.outputs?.length === 1, 10_000);
    for (const service of [a, b]) {
      const { body } = await getJson(`${service.url}/v1/trace/${double.id}`);
      expect(body.arrivals.map((arrival: any) => [arrival.instance, arrival.id, arrival.verdict])).toEqual([
        [a.intake.instance, first.id, 'accepted'],
        [b.intake.instance, double.id, 'fuzzy_duplicate'],
      ]);
      expect(body.arrivals[1].messageIds).toEqual([first.id]);
      expect(body.outputs.map((o: any) => o.id)).toEqual([output!.id]);
    }
  });

  it("streams every instance's activity on each, each entry naming its instance", async () => {
    const prefix = `tr${process.pid}-${++tests}`;
    // A window no slow machine outlasts: the first message's flush trails no batch between the two arrivals.
    const quiet = { debounce: { windowMs: 60_000, maxWaitMs: 120_000, maxMessages: 10 } };
    const [a, b] = await Promise.all([instance(prefix, quiet), instance(prefix, quiet)]);
    const frames = readEvents(`${b.url}/v1/activity`, 2, {
      onOpen: async () => {
        await postJson(`${a.url}/webhooks/generic`, { id: 'act-1', sessionKey: 'cli:act', content: 'one' });
        await postJson(`${b.url}/webhooks/generic`, { id: 'act-1', sessionKey: 'cli:act', content: 'one' });
      },
    });
    const got = await frames;
    expect(got.map((frame) => [frame.data.instance, frame.data.platformId, frame.data.verdict])).toEqual([
      [a.intake.instance, 'act-1', 'accepted'],
      [b.intake.instance, 'act-1', 'duplicate'],
    ]);
    // Resumable on the other instance by the same sequence.
    const resumed = await readEvents(`${a.url}/v1/activity?after=${got[0]!.id}`, 1);
    expect(resumed.map((frame) => [frame.data.instance, frame.data.verdict])).toEqual([
      [b.intake.instance, 'duplicate'],
    ]);
  });
});
