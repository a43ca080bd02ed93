import { afterEach, describe, expect, it } from 'vitest';
import { claims, isClientError, type Claim, type ClaimsOptions } from '../../src/client.js';
import { FakeClaims, type FakeClaimsOptions } from '../support/claims-server.js';
import { until } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { freePort } from '../support/net.js';

const TOKEN = 'operator-token';
let fakes: FakeClaims[] = [];
const stops: AbortController[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop.abort();
  await Promise.all(fakes.map((fake) => fake.close()));
  fakes = [];
});

/** A fake service and a client of it on one manual clock; backoff waits without jitter (half the ceiling). */
async function setup(fakeOptions: FakeClaimsOptions = {}, clientOptions: Partial<ClaimsOptions> = {}) {
  const clock = new ManualClock();
  const fake = await FakeClaims.start({ token: TOKEN, leaseMs: 10_000, maxAttempts: 3, clock, ...fakeOptions });
  fakes.push(fake);
  const stop = new AbortController();
  stops.push(stop);
  const taken = claims({
    url: fake.url,
    token: TOKEN,
    waitMs: 0,
    signal: stop.signal,
    clock,
    random: () => 0,
    backoff: { minMs: 100, maxMs: 5000 },
    ...clientOptions,
  });
  return { clock, fake, stop, taken };
}

async function next(taken: AsyncGenerator<Claim>): Promise<Claim> {
  const step = await taken.next();
  if (step.done) throw new Error('the claims iterator ended');
  return step.value;
}

describe('claims()', () => {
  it('hands out a claim, acks it with an empty body, and then gets the next output of its session', async () => {
    const { fake, taken } = await setup();
    const first = fake.add('cli:alice');
    const second = fake.add('cli:alice');
    const claim = await next(taken);
    expect(claim).toMatchObject({ output: first, attempt: 1 });
    expect(claim.id.startsWith(`${first.id}.1.`)).toBe(true);
    expect(fake.to('/v1/claims')[0]).toMatchObject({ authorization: `Bearer ${TOKEN}` });
    expect(Object.fromEntries(fake.to('/v1/claims')[0]!.query)).toEqual({ max: '1', waitMs: '0' });
    expect(await claim.ack()).toEqual({ already: false });
    expect(fake.to(/\/ack$/)[0]).toMatchObject({ path: `/v1/claims/${encodeURIComponent(claim.id)}/ack`, body: {} });
    expect((await next(taken)).output).toEqual(second);
    expect(fake.records.get(first.id)?.state).toBe('delivered');
  });

  it("sends ack's turn, nack's retry and error, and extend's lease as the service takes them", async () => {
    const { clock, fake, taken } = await setup({}, { max: 3 });
    fake.add('a');
    fake.add('b');
    fake.add('c');
    const [a, b, c] = [await next(taken), await next(taken), await next(taken)];
    expect(Object.fromEntries(fake.to('/v1/claims')[0]!.query)).toEqual({ max: '3', waitMs: '0' });
    await a.ack({ turn: 'open' });
    await b.nack({ retryAfterMs: 5000, error: 'the model timed out' });
    const leaseUntil = await c.extend(20_000);
    expect(fake.to(/\/(ack|nack|extend)$/).map((request) => request.body)).toEqual([
      { turn: 'open' },
      { retryAfterMs: 5000, error: 'the model timed out' },
      { leaseMs: 20_000 },
    ]);
    expect(leaseUntil).toBe(clock.now() + 20_000);
    expect(c.leaseUntil).toBe(leaseUntil);
    expect(fake.records.get(b.output.id)).toMatchObject({ state: 'pending', retryAt: clock.now() + 5000 });
  });

  it('answers a repeated ack as already acked, and throws claim_lost for a claim whose lease ran out', async () => {
    const { clock, fake, taken } = await setup();
    fake.add('a');
    fake.add('b');
    const acked = await next(taken);
    await acked.ack();
    expect(await acked.ack()).toEqual({ already: true });
    const late = await next(taken);
    clock.tick(10_001);
    const lost = await late.ack().catch((error: unknown) => error);
    expect(isClientError(lost) && { status: lost.status, code: lost.code }).toEqual({
      status: 409,
      code: 'claim_lost',
    });
    // The output is offered again, as its next attempt.
    expect(await next(taken)).toMatchObject({ output: late.output, attempt: 2 });
  });

  it('tries an ack again after a 503, and throws the last answer once its retries are spent', async () => {
    const { clock, fake, taken } = await setup({}, { retries: 1 });
    fake.add('a');
    fake.add('b');
    const first = await next(taken);
    fake.scriptActions.push({ status: 503, code: 'store_unavailable' });
    const acked = first.ack();
    await clock.armed(50);
    await clock.advance(50);
    expect(await acked).toEqual({ already: false });
    const second = await next(taken);
    fake.scriptActions.push({ status: 503, code: 'store_unavailable' }, { status: 502 });
    const failed = second.ack().catch((error: unknown) => error);
    await clock.armed(50);
    await clock.advance(50);
    expect(await failed).toMatchObject({ name: 'ClientError', status: 502, code: 'http_502' });
    expect(fake.to(/\/ack$/)).toHaveLength(4);
  });

  it("throws bad_lease for an extend past leaseMs x maxAttempts, with the service's message", async () => {
    const { fake, taken } = await setup();
    fake.add('a');
    const claim = await next(taken);
    const error = await claim.extend(30_001).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      name: 'ClientError',
      status: 400,
      code: 'bad_lease',
      message: 'leaseMs must be 1-30000 in all',
    });
  });

  it('polls again at once after a 204 the service held for waitMs, and hands out the claim of the 200 after it', async () => {
    const { clock, fake, taken } = await setup({}, { waitMs: 1000 });
    const claim = next(taken);
    await clock.armed(1000);
    await clock.advance(1000);
    await until(() => fake.to('/v1/claims').length === 2);
    expect(clock.pending()).toEqual([1000]); // the second poll is held; no backoff wait was armed
    const output = fake.add('cli:bob');
    expect((await claim).output).toEqual(output);
  });

  it('waits before polling again after a 204 answered at once (a stopping service)', async () => {
    const { clock, fake, taken } = await setup({}, { waitMs: 1000 });
    fake.draining = true;
    const claim = next(taken);
    await clock.armed(50);
    expect(fake.to('/v1/claims')).toHaveLength(1);
    fake.draining = false;
    fake.add('cli:bob');
    await clock.advance(50);
    expect((await claim).attempt).toBe(1);
    expect(fake.to('/v1/claims')).toHaveLength(2);
  });

  it('waits before polling again after a 200 without claims answered at once', async () => {
    const { clock, fake, taken } = await setup({}, { waitMs: 1000 });
    fake.script.push({ status: 200, body: { claims: [] } });
    const claim = next(taken);
    await clock.armed(50);
    fake.add('cli:bob');
    await clock.advance(50);
    expect((await claim).output.sessionKey).toBe('cli:bob');
    expect(fake.to('/v1/claims')).toHaveLength(2);
  });

  it('backs off on 503, doubling and taking Retry-After when longer, and polls at once again after a success', async () => {
    const { clock, fake, taken } = await setup();
    fake.script.push(
      { status: 503, code: 'store_unavailable' },
      { status: 503 },
      { status: 503, headers: { 'retry-after': '2' } },
    );
    fake.add('a');
    const first = next(taken);
    for (const wait of [50, 100, 2000]) {
      await clock.armed(wait);
      expect(clock.pending()).toEqual([wait]);
      await clock.advance(wait);
    }
    expect((await first).output.sessionKey).toBe('a');
    fake.script.push({ status: 502 });
    const second = next(taken);
    await clock.armed(50); // a success starts the doubling over
    fake.add('b');
    await clock.advance(50);
    expect((await second).output.sessionKey).toBe('b');
  });

  it('backs off while the connection is refused, and takes the claim once the service listens', async () => {
    const port = await freePort();
    const clock = new ManualClock();
    const stop = new AbortController();
    stops.push(stop);
    const taken = claims({
      url: `http://127.0.0.1:${port}`,
      token: TOKEN,
      waitMs: 0,
      signal: stop.signal,
      clock,
      random: () => 0,
      backoff: { minMs: 100, maxMs: 5000 },
    });
    const claim = next(taken);
    await clock.armed(50);
    await clock.advance(50);
    await clock.armed(100);
    const fake = await FakeClaims.start({ token: TOKEN, port, clock });
    fakes.push(fake);
    const output = fake.add('a');
    await clock.advance(100);
    expect((await claim).output).toEqual(output);
  });

  it("throws a 401 with the service's code and message, and ends", async () => {
    const { taken } = await setup({}, { token: 'wrong' });
    const error = await taken.next().catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      name: 'ClientError',
      status: 401,
      code: 'bad_token',
      message: 'the API token is not server.apiToken',
    });
    expect(await taken.next()).toEqual({ done: true, value: undefined });
  });

  it('throws a 400 of the service (bad_wait) rather than retrying it', async () => {
    const { fake, taken } = await setup();
    fake.script.push({ status: 400, code: 'bad_wait', message: 'waitMs must be 0-60000' });
    await expect(taken.next()).rejects.toMatchObject({ status: 400, code: 'bad_wait' });
    expect(fake.to('/v1/claims')).toHaveLength(1);
  });

  it('refuses max and waitMs out of range before any request', () => {
    expect(() => claims({ url: 'http://127.0.0.1:1', max: 0 })).toThrow(
      'max must be a whole number from 1 to 100 (got 0)',
    );
    expect(() => claims({ url: 'http://127.0.0.1:1', waitMs: 60_001 })).toThrow(RangeError);
  });

  it('ends without an error when its signal is aborted during a long poll', async () => {
    const { clock, stop, taken } = await setup({}, { waitMs: 30_000 });
    const step = taken.next();
    await clock.armed(30_000);
    stop.abort();
    expect(await step).toEqual({ done: true, value: undefined });
  });

  it('hands back at once the claims of a poll the loop never reached when it breaks', async () => {
    const { fake, taken } = await setup({}, { max: 3 });
    const outputs = [fake.add('a'), fake.add('b'), fake.add('c')];
    for await (const claim of taken) {
      expect(claim.output).toEqual(outputs[0]);
      break;
    }
    expect(fake.to(/\/nack$/).map((request) => [request.path.split('.')[0], request.body])).toEqual([
      [`/v1/claims/${outputs[1]!.id}`, { retryAfterMs: 0 }],
      [`/v1/claims/${outputs[2]!.id}`, { retryAfterMs: 0 }],
    ]);
    expect(fake.records.get(outputs[1]!.id)).toMatchObject({ state: 'pending', attempts: 1 });
    expect(fake.records.get(outputs[1]!.id)?.lease).toBeUndefined();
  });

  it('ends a loop that breaks 5 s after handing back its claims when the service does not answer', async () => {
    const { clock, fake, taken } = await setup({}, { max: 2 });
    fake.add('a');
    fake.add('b');
    await next(taken);
    fake.scriptActions.push({ hang: true, status: 0 });
    const ended = taken.return();
    await clock.armed(5000);
    await clock.advance(5000);
    expect(await ended).toEqual({ done: true, value: undefined });
    expect(fake.to(/\/nack$/)).toHaveLength(1);
  });
});
