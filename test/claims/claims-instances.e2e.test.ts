import { describe, expect, it } from 'vitest';
import { postJson, until, useTeardown } from '../support/helpers.js';
import { answer, claim } from '../support/claims.js';
import { delivery, metric, post, twoInstances } from '../support/claims-instances.js';
import { sharedStoresForTests } from '../store/redis-cluster.js';

/*
 * Agent workers' claims answered by any of two real instances sharing one real redis-server, or a
 * real 3-master Redis Cluster: what one instance hands out, the other acks, nacks and extends.
 */

const stores = sharedStoresForTests();
let prefixes = 0;
const prefix = () => `claims${process.pid}n${++prefixes}`;

describe.each(stores.forms)('agent workers claiming outputs from two instances on %s', (_name, store) => {
  const { services } = useTeardown();

  it('answers a poll waiting on A with an output committed on B', async () => {
    const [a, b] = await twoInstances(services, store(), prefix());
    const waiting = claim(a, 'waitMs=30000');
    await until(async () => (await metric(a.url, 'inbox_claim_polls_waiting')) === 1);
    const [output] = await post(b, b, 'cli:a', ['posted to B']);
    const answered = await waiting;
    expect(answered.status).toBe(200);
    expect(answered.claims).toMatchObject([{ attempt: 1, output: { id: output!.id, content: 'posted to B' } }]);
  });

  it('acks on B a claim taken on A, and shows its claim and then its delivery on B', async () => {
    const [a, b] = await twoInstances(services, store(), prefix());
    const [output] = await post(a, b, 'cli:a', ['one']);
    const [taken] = (await claim(a)).claims;
    expect(taken).toMatchObject({ attempt: 1, output: { id: output!.id } });
    expect(await delivery(b.url, output!.id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      claimed: { attempt: 1, leaseUntil: taken!.leaseUntil },
    });
    expect((await claim(b)).status).toBe(204);

    expect(await answer(b, taken!.id, 'ack')).toMatchObject({ status: 200, body: { acked: true } });
    const shown = await delivery(b.url, output!.id);
    expect(shown).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(shown.claimed).toBeUndefined();
    // The first answer lost: the ack repeated on A is the same delivery.
    expect((await answer(a, taken!.id, 'ack')).body).toEqual({ acked: true, already: true });
    expect((await answer(a, taken!.id, 'nack')).body.error.code).toBe('claim_lost');
    expect((await claim(a)).status).toBe(204);
  });

  it('offers an output nacked on B again on A once retryAfterMs passed, with the next attempt', async () => {
    const [a, b] = await twoInstances(services, store(), prefix());
    const [output] = await post(b, a, 'cli:a', ['hard one']);
    const [first] = (await claim(a)).claims;
    const nacked = await answer(b, first!.id, 'nack', { retryAfterMs: 3_000 });
    expect(nacked).toMatchObject({ status: 200, body: { nacked: true, state: 'pending' } });
    expect((await claim(a)).status).toBe(204);
    expect(await delivery(a.url, output!.id)).toMatchObject({ state: 'pending', attempts: 1 });
    expect((await delivery(a.url, output!.id)).claimed).toBeUndefined();

    // A poll waiting on A meanwhile is answered once the retry is due.
    const [again] = (await claim(a, 'waitMs=30000')).claims;
    expect(again).toMatchObject({ attempt: 2, output: { id: output!.id } });
    expect((await answer(b, first!.id, 'ack')).status).toBe(409);
    expect(await metric(a.url, 'inbox_claim_expired_total')).toBe(0);
    expect((await answer(b, again!.id, 'ack')).status).toBe(200);
  });

  it("keeps an output extended on B from A's polls past the lease it was claimed with", async () => {
    const [a, b] = await twoInstances(services, store(), prefix(), { leaseMs: 1_000 });
    const [output] = await post(a, a, 'cli:a', ['long task']);
    const [taken] = (await claim(a)).claims;
    const extended = await answer(b, taken!.id, 'extend', { leaseMs: 8_000 });
    expect(extended.status).toBe(200);
    const leaseUntil = extended.body.leaseUntil as number;
    expect(leaseUntil).toBeGreaterThan(taken!.leaseUntil);
    // The lease it was claimed with has run out (the store's clock and this one are the machine's).
    await until(() => Date.now() > taken!.leaseUntil + 50, 10_000);
    expect((await claim(a)).status).toBe(204);
    expect(await delivery(a.url, output!.id)).toMatchObject({ claimed: { attempt: 1, leaseUntil } });
    expect((await answer(a, taken!.id, 'ack')).body).toEqual({ acked: true });
  });

  it('hands out the outputs of one session one at a time and in seq order, whichever instance polls', async () => {
    const [a, b] = await twoInstances(services, store(), prefix());
    const outputs = await post(b, a, 'cli:a', ['first', 'second', 'third']);
    expect(outputs.map((output) => output.content)).toEqual(['first', 'second', 'third']);
    const taken: string[] = [];
    for (let round = 0; round < 3; round++) {
      const polls = await Promise.all([claim(a, 'max=10&waitMs=0'), claim(b, 'max=10&waitMs=0')]);
      const claims = polls.flatMap((poll) => poll.claims);
      expect(claims, `round ${round}`).toHaveLength(1);
      taken.push(claims[0]!.output.content);
      expect(claims[0]!.output.seq).toBe(outputs[round]!.seq);
      // While it is out, neither instance hands out the next.
      expect(
        (await Promise.all([claim(a, 'max=10&waitMs=0'), claim(b, 'max=10&waitMs=0')])).map((poll) => poll.status),
      ).toEqual([204, 204]);
      // Acked on the instance that did not hand it out.
      const other = polls[0]!.claims.length === 1 ? b : a;
      expect((await answer(other, claims[0]!.id, 'ack')).status).toBe(200);
    }
    expect(taken).toEqual(['first', 'second', 'third']);
    // Each was answered in time: no lease ran out.
    expect(await Promise.all([a, b].map((at) => metric(at.url, 'inbox_claim_expired_total')))).toEqual([0, 0]);
    expect((await Promise.all([claim(a), claim(b)])).map((poll) => poll.status)).toEqual([204, 204]);
  });

  it("counts B's claims in B's metrics", async () => {
    const [a, b] = await twoInstances(services, store(), prefix());
    await post(a, b, 'cli:a', ['x']);
    await post(a, b, 'cli:b', ['y']);
    const taken = (await claim(b, 'max=10&waitMs=0')).claims;
    expect(taken).toHaveLength(2);
    expect(await metric(b.url, 'inbox_claims_outstanding')).toBe(2);
    expect(await metric(b.url, 'inbox_claim_expired_total')).toBe(0);
    expect(await metric(a.url, 'inbox_claims_outstanding')).toBe(0);
    expect((await answer(a, taken[0]!.id, 'ack')).status).toBe(200);
    expect((await answer(b, taken[1]!.id, 'ack')).status).toBe(200);
    expect(await metric(b.url, 'inbox_claim_wait_seconds_count')).toBe(2);
  });

  it('takes messages on A again once outputs committed on A were acked on B (agent.maxPending counts the whole outbox)', async () => {
    const [a, b] = await twoInstances(services, store(), prefix(), {}, { maxPending: 2 });
    await post(a, b, 'cli:a', ['one']);
    await post(a, b, 'cli:b', ['two']);
    const refused = await postJson(`${a.url}/webhooks/generic`, { id: 'm3', sessionKey: 'cli:c', content: 'three' });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('outbox_full');

    for (const taken of (await claim(b, 'max=10&waitMs=0')).claims)
      expect((await answer(b, taken.id, 'ack')).status).toBe(200);
    await until(
      async () =>
        (await postJson(`${a.url}/webhooks/generic`, { id: 'm3', sessionKey: 'cli:c', content: 'three' })).status ===
        200,
      5_000,
    );
    expect((await claim(a, 'waitMs=30000')).claims).toMatchObject([{ output: { content: 'three' } }]);
  });

  it('answers the same ack sent to A and B at once 200 on both, one of them already acked', async () => {
    const [a, b] = await twoInstances(services, store(), prefix());
    const [output] = await post(a, b, 'cli:a', ['twice']);
    const [taken] = (await claim(a)).claims;
    const answers = await Promise.all([answer(a, taken!.id, 'ack'), answer(b, taken!.id, 'ack')]);
    expect(answers.map((reply) => reply.status)).toEqual([200, 200]);
    expect(answers.map((reply) => reply.body.already ?? false).sort()).toEqual([false, true]);
    expect(await delivery(a.url, output!.id)).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it("closes on B's ack the agent turn of an output committed on A, and keeps it open when the ack says so", async () => {
    const [a, b] = await twoInstances(services, store(), prefix(), {}, {}, { turns: { mode: 'collect' } });
    const turnOpen = async (key: string) => (await a.intake.turn(key)).open;
    await post(a, b, 'cli:a', ['closes']);
    await post(a, b, 'cli:b', ['stays open']);
    const taken = new Map((await claim(a, 'max=2&waitMs=0')).claims.map((c) => [c.output.sessionKey, c]));
    expect([await turnOpen('cli:a'), await turnOpen('cli:b')]).toEqual([true, true]);
    expect((await answer(b, taken.get('cli:a')!.id, 'ack')).status).toBe(200);
    expect((await answer(b, taken.get('cli:b')!.id, 'ack', { turn: 'open' })).status).toBe(200);
    expect([await turnOpen('cli:a'), await turnOpen('cli:b')]).toEqual([false, true]);
  });
});
