import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/local/memory.js';
import { startService, tempDir, until, useTeardown } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { answer, claim, say, startClaims } from '../support/claims.js';

const delivery = async (url: string, id: string) =>
  ((await (await fetch(`${url}/v1/events/${id}`)).json()) as { delivery: Record<string, unknown> }).delivery;
const metric = async (url: string, name: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
};

describe.each(['memory', 'sqlite'] as const)('agent workers claiming outputs (%s store)', (store) => {
  const { services } = useTeardown();
  const start = async (extra: Record<string, unknown> = {}, clock = new ManualClock()) => {
    const running = await startClaims(clock, store, extra);
    services.push(running);
    return { running, clock };
  };

  it("hands out one output of a session at a time, in seq order, and different sessions' in parallel", async () => {
    const { running, clock } = await start();
    const a1 = await say(running, clock, 'cli:a', 'a one');
    const a2 = await say(running, clock, 'cli:a', 'a two');
    const b1 = await say(running, clock, 'cli:b', 'b one');
    expect(await delivery(running.url, a1.id)).toMatchObject({ state: 'pending', attempts: 0 });

    const first = await claim(running, 'max=10&waitMs=0');
    expect(first.status).toBe(200);
    expect(first.claims.map((c) => c.output.id).sort()).toEqual([a1.id, b1.id].sort());
    const claimA1 = first.claims.find((c) => c.output.id === a1.id)!;
    expect(claimA1).toMatchObject({ attempt: 1, leaseUntil: clock.now() + 10_000, output: { content: 'a one' } });
    expect(claimA1.output.seq).toBe(a1.seq);
    // a2 waits behind a1, whatever the poll asks for.
    expect((await claim(running, 'max=10&waitMs=0')).status).toBe(204);
    expect(await metric(running.url, 'inbox_claims_outstanding')).toBe(2);
    expect(await metric(running.url, 'inbox_claim_wait_seconds_count')).toBe(2);
    const stats = (await (await fetch(`${running.url}/v1/stats`)).json()) as { delivery: unknown };
    expect(stats.delivery).toMatchObject({
      url: null,
      claims: { leaseMs: 10_000, maxAttempts: 3, outstanding: 2, polls: 0 },
      pending: 3,
      dead: 0,
    });

    expect(await answer(running, claimA1.id, 'ack')).toMatchObject({ status: 200, body: { acked: true } });
    expect(await metric(running.url, 'inbox_claims_outstanding')).toBe(1);
    const next = await claim(running, 'max=10&waitMs=0');
    expect(next.claims.map((c) => c.output.id)).toEqual([a2.id]);
    expect(await delivery(running.url, a1.id)).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('answers a waiting poll as soon as an output is committed, and 204 once its waitMs passed', async () => {
    const { running, clock } = await start();
    const waiting = claim(running, 'waitMs=30000');
    await clock.armed(30_000);
    const output = await say(running, clock, 'cli:a', 'hello');
    const answered = await waiting;
    expect(answered.status).toBe(200);
    expect(answered.claims.map((c) => c.output.id)).toEqual([output.id]);

    const empty = claim(running, 'waitMs=5000');
    await clock.armed(5_000);
    await clock.advance(5_000);
    expect((await empty).status).toBe(204);
  });

  it('takes nothing for a poll whose client went away while it waited', async () => {
    const { running, clock } = await start();
    const gone = new AbortController();
    const abandoned = fetch(`${running.url}/v1/claims?waitMs=60000`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      signal: gone.signal,
    }).catch(() => 'aborted');
    await clock.armed(60_000);
    gone.abort();
    expect(await abandoned).toBe('aborted');
    await until(async () => (await metric(running.url, 'inbox_claim_polls_waiting')) === 0);
    const output = await say(running, clock, 'cli:a', 'for a worker still there');
    expect((await claim(running)).claims).toMatchObject([{ attempt: 1, output: { id: output.id } }]);
  });

  it('offers an output again with the next attempt once its lease runs out; the late ack is 409 claim_lost', async () => {
    const { running, clock } = await start();
    const output = await say(running, clock, 'cli:a', 'slow');
    const [taken] = (await claim(running)).claims;
    expect(await delivery(running.url, output.id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      claimed: { attempt: 1, leaseUntil: taken!.leaseUntil },
    });
    expect((await claim(running)).status).toBe(204);

    // A worker waiting meanwhile gets it as the lease runs out (the re-check timer), not later.
    const waiting = claim(running, 'waitMs=60000');
    await clock.armed(60_000);
    await clock.advance(10_001);
    const again = await waiting;
    expect(again.claims).toMatchObject([{ attempt: 2, output: { id: output.id } }]);
    expect(await metric(running.url, 'inbox_claim_expired_total')).toBe(1);

    const late = await answer(running, taken!.id, 'ack');
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('claim_lost');
    expect(late.body.error.message).toContain('ran out or was taken by another claim; it is offered again');
    expect((await answer(running, again.claims[0]!.id, 'ack')).status).toBe(200);
  });

  it('moves an output whose leases all ran out to dead letters; a retry of it offers it again from attempt 1', async () => {
    const { running, clock } = await start({ agent: { claims: { maxAttempts: 2 } } });
    const output = await say(running, clock, 'cli:a', 'never answered');
    const behind = await say(running, clock, 'cli:a', 'waits behind it');
    for (const attempt of [1, 2]) {
      expect((await claim(running)).claims).toMatchObject([{ attempt, output: { id: output.id } }]);
      await clock.advance(10_001);
    }
    // The third claim would be past maxAttempts: a dead letter, and the session's next output goes.
    const [next] = (await claim(running)).claims;
    expect(next).toMatchObject({ attempt: 1, output: { id: behind.id } });
    const dead = (await (await fetch(`${running.url}/v1/deadletters`)).json()) as Record<string, any>;
    expect(dead).toMatchObject({
      count: 1,
      deadletters: [{ id: output.id, attempts: 2, lastError: 'lease ran out 2 times' }],
    });
    expect(await delivery(running.url, output.id)).toMatchObject({ state: 'dead' });

    const retried = await fetch(`${running.url}/v1/deadletters/${output.id}/retry`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    expect(await retried.json()).toEqual({ requeued: 1 });
    // Behind the claimed head of its session: offered once that one is answered.
    expect((await claim(running)).status).toBe(204);
    expect((await answer(running, next!.id, 'ack')).status).toBe(200);
    expect((await claim(running, 'max=5')).claims).toMatchObject([{ attempt: 1, output: { id: output.id } }]);
  });

  it('offers a nacked output again after retryAfterMs, and a nack of the last attempt makes a dead letter with its reason', async () => {
    const { running, clock } = await start({ agent: { claims: { maxAttempts: 2 } } });
    const output = await say(running, clock, 'cli:a', 'hard one');
    const [first] = (await claim(running)).claims;
    const nacked = await answer(running, first!.id, 'nack', { retryAfterMs: 2_000 });
    expect(nacked).toMatchObject({
      status: 200,
      body: { nacked: true, state: 'pending', retryAt: clock.now() + 2_000 },
    });
    expect((await claim(running)).status).toBe(204);
    await clock.advance(2_000);
    const [second] = (await claim(running)).claims;
    expect(second).toMatchObject({ attempt: 2, output: { id: output.id } });
    const last = await answer(running, second!.id, 'nack', { error: 'model refused: context too long' });
    expect(last.body).toEqual({ nacked: true, state: 'dead' });
    expect(await delivery(running.url, output.id)).toMatchObject({
      state: 'dead',
      attempts: 2,
      lastError: 'model refused: context too long',
    });
  });

  it('extends a lease; past leaseMs x maxAttempts from the claim it is 400 bad_lease', async () => {
    const { running, clock } = await start();
    await say(running, clock, 'cli:a', 'long task');
    const [taken] = (await claim(running)).claims;
    await clock.advance(9_000);
    const extended = await answer(running, taken!.id, 'extend', { leaseMs: 20_000 });
    expect(extended).toMatchObject({ status: 200, body: { leaseUntil: clock.now() + 20_000 } });
    await clock.advance(15_000);
    // Past the first lease's end, the extended lease holds: nothing is offered again.
    expect((await claim(running)).status).toBe(204);
    // 24 s in; 10 s x 3 attempts is 30 s in all.
    const tooLong = await answer(running, taken!.id, 'extend', { leaseMs: 7_000 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.code).toBe('bad_lease');
    expect((await answer(running, taken!.id, 'extend', { leaseMs: 5_000 })).status).toBe(200);
    expect((await answer(running, taken!.id, 'ack')).status).toBe(200);
  });

  it('closes the output\'s agent turn on an ack, unless the ack says {"turn":"open"}', async () => {
    const { running, clock } = await start({ turns: { mode: 'collect' } });
    const turnOf = async (key: string) =>
      ((await (await fetch(`${running.url}/v1/sessions/${encodeURIComponent(key)}/turn`)).json()) as { open: boolean })
        .open;
    await say(running, clock, 'cli:a', 'closes');
    await say(running, clock, 'cli:b', 'stays open');
    const taken = (await claim(running, 'max=2')).claims;
    const byKey = new Map(taken.map((c) => [c.output.sessionKey, c]));
    expect([await turnOf('cli:a'), await turnOf('cli:b')]).toEqual([true, true]);
    expect((await answer(running, byKey.get('cli:a')!.id, 'ack')).status).toBe(200);
    expect((await answer(running, byKey.get('cli:b')!.id, 'ack', { turn: 'open' })).status).toBe(200);
    expect([await turnOf('cli:a'), await turnOf('cli:b')]).toEqual([false, true]);
  });
});

describe('agent workers claiming outputs on two instances of one store', () => {
  const { services } = useTeardown();

  it("wakes a poll waiting on one instance for an output committed on the other (the store's tail)", async () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    const settings = {
      debounce: { windowMs: 0, maxWaitMs: 0 },
      agent: { claims: { leaseMs: 10_000, maxAttempts: 3 } },
    };
    const a = await startService(settings, { clock, store });
    const b = await startService(settings, { clock, store });
    services.push(a, b);
    const waiting = claim(b, 'waitMs=60000');
    await clock.armed(60_000);
    const output = await say(a, clock, 'cli:a', 'committed on A');
    expect((await waiting).claims).toMatchObject([{ attempt: 1, output: { id: output.id } }]);
  });
});

describe('agent workers claiming outputs across a restart (SQLite store)', () => {
  const { services } = useTeardown();

  it('offers an output claimed before a restart again after it, with the next attempt', async () => {
    const dir = tempDir().path;
    const clock = new ManualClock();
    const before = await startClaims(clock, 'sqlite', {}, dir);
    const output = await say(before, clock, 'cli:a', 'survives');
    const [taken] = (await claim(before)).claims;
    expect(taken).toMatchObject({ attempt: 1 });
    await before.stop();

    const after = await startClaims(clock, 'sqlite', {}, dir);
    services.push(after);
    const [again] = (await claim(after)).claims;
    expect(again).toMatchObject({ attempt: 2, output: { id: output.id, content: 'survives' } });
    expect((await answer(after, taken!.id, 'ack')).status).toBe(409);
    expect((await answer(after, again!.id, 'ack')).body).toEqual({ acked: true });
  });
});
