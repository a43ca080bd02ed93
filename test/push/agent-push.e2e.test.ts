import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startService, tempDir, until, type Running } from '../support/helpers.js';
import { serve, type TestServer } from '../support/servers.js';
import { ManualClock } from '../support/manual-clock.js';

const SECRET = 'whsec_' + Buffer.from('agent-shared-secret-0123456789').toString('base64');

/** An independent Standard Webhooks check, as an agent would write it. */
function verify(secret: string, headers: IncomingHttpHeaders, body: string): boolean {
  const id = String(headers['webhook-id']);
  const timestamp = String(headers['webhook-timestamp']);
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return String(headers['webhook-signature'])
    .split(' ')
    .some((part) => {
      const [version, signature] = part.split(',');
      const given = Buffer.from(signature ?? '', 'base64');
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

interface Received {
  id: string;
  body: any;
  verified: boolean;
}

describe('push to the agent', () => {
  let agent: TestServer;
  let service: Running;
  let received: Received[] = [];
  /** What the agent answers: a status per call, by default 200. */
  let answer: (n: number, body: any) => number = () => 200;

  beforeAll(async () => {
    agent = await serve((req, res, n) => {
      let text = '';
      req.on('data', (chunk) => {
        text += chunk;
      });
      req.on('end', () => {
        const body = JSON.parse(text);
        const status = answer(n, body);
        if (status === 200)
          received.push({ id: String(req.headers['webhook-id']), body, verified: verify(SECRET, req.headers, text) });
        res.statusCode = status;
        if (status === 429) res.setHeader('retry-after', '0');
        res.end();
      });
    });
  });
  afterAll(() => agent.close());
  afterEach(async () => {
    await service?.stop();
    received = [];
    answer = () => 200;
    agent.hits.clear();
  });

  const start = (agentOptions: Record<string, unknown> = {}, dir?: string, clock?: ManualClock) =>
    startService(
      {
        debounce: { windowMs: 30, maxWaitMs: 100, maxMessages: 1 },
        agent: {
          url: `http://127.0.0.1:${agent.port}/inbox`,
          secret: SECRET,
          retries: 20,
          minBackoffMs: 20,
          maxBackoffMs: 100,
          timeoutMs: 1000,
          ...agentOptions,
        },
      },
      { ...(dir ? { dir } : {}), ...(clock ? { clock } : {}) },
    );
  const send = (sessionKey: string, content: string) =>
    postJson(`${service.url}/webhooks/generic`, { sessionKey, content });

  it('signs each push so an independent Standard Webhooks check verifies it', async () => {
    service = await start();
    await send('cli:a', 'hello agent');
    await until(() => received.length === 1);
    expect(received[0]).toMatchObject({
      verified: true,
      body: { type: 'chat.processedMessage', content: 'hello agent', seq: 1 },
    });
    expect(received[0]!.id).toBe(received[0]!.body.id);
    const state = (await (await fetch(`${service.url}/v1/events/${received[0]!.id}`)).json()) as any;
    expect(state.delivery).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('delivers once after two 503s, with one webhook-id across the attempts', async () => {
    const ids: string[] = [];
    answer = (n, body) => {
      ids.push(body.id);
      return n <= 2 ? 503 : 200;
    };
    service = await start();
    await send('cli:b', 'retry me');
    await until(() => ids.length === 3);
    await service.intake.settle();
    expect(received).toHaveLength(1);
    expect(new Set(ids).size).toBe(1);
    expect(ids).toHaveLength(3);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/inbox_delivery_total\{result="retried"\} 2/);
    expect(metrics).toMatch(/inbox_delivery_total\{result="delivered"\} 1/);
  });

  it('loses nothing through an outage and keeps each session in order', async () => {
    let down = true;
    answer = () => (down ? 503 : 200);
    const clock = new ManualClock();
    service = await start({ concurrency: 4 }, undefined, clock);
    for (let i = 1; i <= 5; i++) {
      await send('cli:one', `one-${i}`);
      await send('cli:two', `two-${i}`);
      await clock.advance(40);
    }
    // Through a few backoffs (20-100 ms) with the agent down: attempts fail, nothing is lost.
    for (let i = 0; i < 10; i++) await clock.advance(100);
    await until(() => (agent.hits.get('/inbox') ?? 0) >= 4);
    expect(received).toHaveLength(0);
    down = false;
    await until(async () => {
      await clock.advance(100);
      return received.length === 10;
    }, 10_000);
    const order = (session: string) => received.filter((r) => r.body.sessionKey === session).map((r) => r.body.content);
    expect(order('cli:one')).toEqual(['one-1', 'one-2', 'one-3', 'one-4', 'one-5']);
    expect(order('cli:two')).toEqual(['two-1', 'two-2', 'two-3', 'two-4', 'two-5']);
  });

  it('sends a 400 straight to dead letters and delivers it after a retry call', async () => {
    let reject = true;
    answer = () => (reject ? 400 : 200);
    service = await start();
    await send('cli:c', 'bad at first');
    const dead = await until(async () => {
      const list = (await (await fetch(`${service.url}/v1/deadletters`)).json()) as any;
      return list.deadletters.length === 1 ? list : undefined;
    });
    expect(agent.hits.get('/inbox')).toBe(1);
    expect(dead.deadletters[0]).toMatchObject({
      sessionKey: 'cli:c',
      attempts: 1,
      lastError: 'agent answered HTTP 400',
    });
    reject = false;
    expect(
      (
        await fetch(`${service.url}/v1/deadletters/nope/retry`, {
          method: 'POST',
          headers: { 'x-requested-with': 'test' },
        })
      ).status,
    ).toBe(404);
    const retried = await fetch(`${service.url}/v1/deadletters/${dead.deadletters[0].id}/retry`, {
      method: 'POST',
      headers: { 'x-requested-with': 'test' },
    });
    expect(await retried.json()).toEqual({ requeued: 1 });
    await until(() => received.length === 1);
    expect(((await (await fetch(`${service.url}/v1/deadletters`)).json()) as any).deadletters).toEqual([]);
  });

  it('moves a message to dead letters after its retries and re-sends all on request', async () => {
    let fail = true;
    answer = () => (fail ? 500 : 200);
    service = await start({ retries: 3 });
    await send('cli:d', 'first');
    await send('cli:e', 'second');
    await until(
      async () => ((await (await fetch(`${service.url}/v1/deadletters`)).json()) as any).deadletters.length === 2,
    );
    expect(agent.hits.get('/inbox')).toBe(6);
    fail = false;
    expect(
      await (
        await fetch(`${service.url}/v1/deadletters/retry`, { method: 'POST', headers: { 'x-requested-with': 'test' } })
      ).json(),
    ).toEqual({ requeued: 2 });
    await until(() => received.length === 2);
  });

  it('keeps counts exact under parallel retry-all calls, and refuses a limit out of range', async () => {
    let fail = true;
    answer = () => (fail ? 400 : 200);
    service = await start();
    for (const session of ['p1', 'p2', 'p3', 'p4']) await send(`cli:${session}`, 'x');
    await until(async () => ((await (await fetch(`${service.url}/v1/deadletters`)).json()) as any).count === 4);
    fail = false;
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        fetch(`${service.url}/v1/deadletters/retry`, { method: 'POST', headers: { 'x-requested-with': 'test' } }).then(
          (r) => r.json() as Promise<any>,
        ),
      ),
    );
    expect(answers.reduce((sum, a) => sum + a.requeued, 0)).toBe(4);
    await until(() => received.length === 4);
    const stats = (await (await fetch(`${service.url}/v1/stats`)).json()) as any;
    expect(stats.delivery).toMatchObject({ pending: 0, dead: 0, saturated: false });
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
    for (const limit of ['-1', '0', '1001', 'abc']) {
      const bad = await fetch(`${service.url}/v1/deadletters/retry?limit=${limit}`, {
        method: 'POST',
        headers: { 'x-requested-with': 'test' },
      });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as any).error.code).toBe('bad_limit');
    }
  });

  it('resumes undelivered messages after a restart', async () => {
    const dir = tempDir().path;
    answer = () => 503;
    service = await start({}, dir);
    await send('cli:f', 'survive');
    await until(() => (agent.hits.get('/inbox') ?? 0) >= 1);
    await service.stop();
    answer = () => 200;
    service = await start({}, dir);
    await until(() => received.length === 1);
    expect(received[0]!.body.content).toBe('survive');
  });

  it('answers 503 with Retry-After past maxPending, reports it on /readyz, and recovers', async () => {
    let down = true;
    answer = () => (down ? 503 : 200);
    service = await start({ maxPending: 2 });
    await send('cli:g', 'a');
    await send('cli:h', 'b');
    await until(async () => (await fetch(`${service.url}/readyz`)).status === 503);
    const refused = await send('cli:i', 'c');
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('outbox_full');
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(await (await fetch(`${service.url}/metrics`)).text()).toMatch(/inbox_backpressure 1/);
    down = false;
    await until(async () => (await fetch(`${service.url}/readyz`)).status === 200, 10_000);
    expect((await send('cli:i', 'c')).status).toBe(200);
    await until(() => received.length === 3);
  });
});
