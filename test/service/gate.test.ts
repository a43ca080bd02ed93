import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { useRedis } from '../support/redis.js';

const message = (id: string, session: string) => ({ id, sessionKey: `cli:${session}`, content: `hello ${id}` });

describe.each(['memory', 'sqlite'])('the flush backlog on the %s store', (kind) => {
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('refuses deliveries with 503 + Retry-After past debounce.maxOpenBuffers, records nothing, shows it in readiness and metrics, and takes them again once flushed', async () => {
    const clock = new ManualClock();
    const store = kind === 'memory' ? { store: 'memory' } : {};
    service = await startService(
      { ...store, debounce: { windowMs: 1000, maxWaitMs: 5000, maxOpenBuffers: 2 } },
      { clock },
    );
    const post = (id: string, session: string) => postJson(`${service!.url}/webhooks/generic`, message(id, session));

    expect((await post('a1', 'a')).status).toBe(200);
    expect((await post('b1', 'b')).status).toBe(200);
    const refused = await post('c1', 'c');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.body.error.code).toBe('debounce_backlog');
    expect(refused.body.error.message).toContain('debounce.maxOpenBuffers 2');
    // A session with a buffer open is refused too: the bound is on what waits, not on new sessions.
    expect((await post('a2', 'a')).status).toBe(503);
    expect(await service.intake.store.openBuffers()).toBe(2);

    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { problems: string[] }).problems).toContain(
      'flush backlog: 2 debounce buffers open (debounce.maxOpenBuffers 2)',
    );
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^inbox_debounce_backpressure 1$/m);
    expect(metrics).toMatch(/^inbox_debounce_max_open_buffers 2$/m);

    await clock.advance(1000);
    await until(async () => (await service!.intake.store.openBuffers()) === 0);
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
    // Nothing of the refused delivery was recorded: its retry is new, not a duplicate.
    expect((await post('c1', 'c')).body).toEqual({
      accepted: 1,
      duplicates: 0,
      events: [{ id: 'c1', verdict: 'accepted' }],
    });
    expect(await (await fetch(`${service.url}/metrics`)).text()).toMatch(/^inbox_debounce_backpressure 0$/m);
  });
});

describe('the flush backlog on a Redis store several instances share', () => {
  const redis = useRedis();
  const services: Running[] = [];
  afterEach(async () => {
    for (const service of services.splice(0)) await service.stop();
  });

  it("counts every instance's open buffers against debounce.maxOpenBuffers, recounting at most every 100 ms", async () => {
    const clock = new ManualClock();
    // A window no test run reaches: the buffers stay open (Redis stamps them with its own clock).
    const file = { store: redis.url, debounce: { windowMs: 600_000, maxWaitMs: 600_000, maxOpenBuffers: 2 } };
    const [a, b] = [await startService(file, { clock }), await startService(file, { clock })];
    services.push(a!, b!);
    const post = (service: Running, id: string) => postJson(`${service.url}/webhooks/generic`, message(id, id));

    expect((await post(a!, 'r1')).status).toBe(200);
    expect((await post(b!, 'r2')).status).toBe(200);
    // Within 100 ms of its last count an instance goes by that count: the bound is overshot by
    // what arrives meanwhile, and Redis is not asked once per delivery.
    expect((await post(a!, 'r2b')).status).toBe(200);
    await clock.advance(100);
    const refused = await post(a!, 'r3');
    expect([refused.status, refused.body.error?.code]).toEqual([503, 'debounce_backlog']);
    expect((await post(b!, 'r4')).status).toBe(503);
    expect((await fetch(`${b!.url}/readyz`)).status).toBe(503);
    expect(await a!.intake.store.openBuffers()).toBe(3);
  });
});

describe('a store that fails an admission', () => {
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('says the delivery may not have been recorded when the store did not answer in time, and nothing was when it refused', async () => {
    service = await startService({ store: 'memory' });
    const { store } = service.intake;
    let failure = new Error('Redis store: admit failed: Command timed out', { cause: new Error('Command timed out') });
    store.admit = () => Promise.reject(failure);
    const timedOut = await postJson(`${service.url}/webhooks/generic`, message('t1', 't'));
    expect(timedOut.status).toBe(503);
    expect(timedOut.body.error).toEqual({
      code: 'store_unavailable',
      message:
        'The store is unreachable; the delivery may not have been recorded (the store did not answer in time), retry later',
    });

    failure = Object.assign(new Error('SQLITE_FULL: database or disk is full'), { code: 'SQLITE_FULL' });
    const full = await postJson(`${service.url}/webhooks/generic`, message('t2', 't'));
    expect(full.body.error.message).toBe('The store is unreachable; nothing was recorded, retry later');
  });
});
