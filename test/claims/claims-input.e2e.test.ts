import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/local/memory.js';
import { postJson, startService, useTeardown } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { answer, claim, say, startClaims } from '../support/claims.js';

describe('claims: what workers get wrong', () => {
  const { services } = useTeardown();
  const start = async () => {
    const clock = new ManualClock();
    const running = await startClaims(clock, 'memory');
    services.push(running);
    return { running, clock };
  };

  it('refuses a max or waitMs out of range, empty or given twice with 400 naming what is allowed', async () => {
    const { running } = await start();
    for (const [query, code] of [
      ['max=0', 'bad_max'],
      ['max=1000', 'bad_max'],
      ['max=', 'bad_max'],
      ['max=1&max=2', 'bad_max'],
      ['max=two', 'bad_max'],
      ['waitMs=-1', 'bad_wait'],
      ['waitMs=60001', 'bad_wait'],
      ['waitMs=1&waitMs=2', 'bad_wait'],
    ] as const) {
      const refused = await claim(running, query);
      expect({ query, status: refused.status, code: refused.body.error.code }).toEqual({ query, status: 400, code });
    }
    expect((await claim(running, 'max=1000')).body.error.message).toBe(
      'max must be a whole number from 1 to 100 (got "1000")',
    );
  });

  it('acks twice with 200, the second saying it was already; an unknown or malformed id is 404', async () => {
    const { running, clock } = await start();
    await say(running, clock, 'cli:a', 'once');
    const [taken] = (await claim(running)).claims;
    expect((await answer(running, taken!.id, 'ack')).body).toEqual({ acked: true });
    expect(await answer(running, taken!.id, 'ack')).toMatchObject({
      status: 200,
      body: { acked: true, already: true },
    });
    for (const action of ['nack', 'extend'] as const) {
      const late = await answer(running, taken!.id, action, action === 'extend' ? { leaseMs: 1000 } : {});
      expect({ action, status: late.status, code: late.body.error.code }).toEqual({
        action,
        status: 409,
        code: 'claim_lost',
      });
    }
    for (const id of ['V1StGXR8_Z5jdHi6B-myT.1.7', 'not-a-claim', `${taken!.id}.9`]) {
      const unknown = await answer(running, id, 'ack');
      expect({ id, status: unknown.status, code: unknown.body.error.code }).toEqual({
        id,
        status: 404,
        code: 'unknown_claim',
      });
    }
  });

  it('refuses a nack with a negative, fractional or too long retryAfterMs, and an extend out of range, with 400', async () => {
    const { running, clock } = await start();
    await say(running, clock, 'cli:a', 'in hand');
    const [taken] = (await claim(running)).claims;
    for (const body of [
      { retryAfterMs: -1 },
      { retryAfterMs: 86_400_001 },
      { retryAfterMs: 1.5 },
      { retryAfterMs: '5' },
    ]) {
      const refused = await answer(running, taken!.id, 'nack', body);
      expect({ body, status: refused.status, code: refused.body.error.code }).toEqual({
        body,
        status: 400,
        code: 'bad_retry',
      });
    }
    for (const body of [{ leaseMs: 0 }, { leaseMs: 30_001 }, {}, { leaseMs: 'long' }]) {
      const refused = await answer(running, taken!.id, 'extend', body);
      expect({ body, status: refused.status, code: refused.body.error.code }).toEqual({
        body,
        status: 400,
        code: 'bad_lease',
      });
    }
    expect((await answer(running, taken!.id, 'ack', { turn: 'later' })).body.error.code).toBe('bad_shape');
    // None of it touched the claim.
    expect((await answer(running, taken!.id, 'ack')).body).toEqual({ acked: true });
  });

  it('answers 503 store_unavailable when the store cannot claim or record an answer, never a 500', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    const running = await startClaims(clock, 'memory', {}, undefined, store);
    services.push(running);
    await say(running, clock, 'cli:a', 'in hand');
    const [taken] = (await claim(running)).claims;
    const failing = () => Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
    Object.assign(store, { claimOutputs: failing, ackPush: failing });
    const poll = await claim(running);
    expect({ status: poll.status, code: poll.body.error.code }).toEqual({ status: 503, code: 'store_unavailable' });
    const ack = await answer(running, taken!.id, 'ack');
    expect({ status: ack.status, code: ack.body.error.code }).toEqual({ status: 503, code: 'store_unavailable' });
    expect(ack.headers.get('retry-after')).toBe('5');
  });

  it('answers 409 claims_not_configured without agent.claims, naming the setting', async () => {
    const running = await startService({ store: 'memory' });
    services.push(running);
    const refused = await postJson(`${running.url}/v1/claims?waitMs=0`, '');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'claims_not_configured' });
    expect(refused.body.error.message).toContain('agent.claims');
  });
});
