import { describe, expect, it } from 'vitest';
import { startChild } from '../support/child.js';
import { postJson, startService, tempDir, until, useTeardown } from '../support/helpers.js';
import { freePort } from '../support/net.js';
import { answer, claim, type ClaimBody } from '../support/claims.js';
import {
  claimsEnv,
  claimsSettings,
  deadLetters,
  delivery,
  metric,
  post,
  twoInstances,
} from '../support/claims-instances.js';
import { sharedStoresForTests } from '../store/redis-cluster.js';

/*
 * Leases of agent workers' claims across two real instances sharing one real redis-server, or a
 * real 3-master Redis Cluster. The store's clock runs the leases, so these wait for what a lease
 * running out does (`until`), never for a span of their own.
 */

const stores = sharedStoresForTests();
let prefixes = 0;
const prefix = () => `leases${process.pid}n${++prefixes}`;

describe.each(stores.forms)('claims whose lease runs out, on two instances on %s', (_name, store) => {
  const { services, children } = useTeardown();

  it('offers an output claimed on A again on B once the lease ran out; after maxAttempts it is a dead letter both list, and a retry offers it again', async () => {
    const [a, b] = await twoInstances(services, store(), prefix(), { leaseMs: 1_000, maxAttempts: 2 });
    const [output] = await post(a, b, 'cli:a', ['never answered']);
    const [first] = (await claim(a)).claims;
    expect(first).toMatchObject({ attempt: 1, output: { id: output!.id } });

    // A worker waiting on B gets it as the lease runs out.
    const again = await claim(b, 'waitMs=30000');
    expect(again.claims).toMatchObject([{ attempt: 2, output: { id: output!.id } }]);
    expect(await metric(b.url, 'inbox_claim_expired_total')).toBe(1);
    const late = await answer(a, first!.id, 'ack');
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('claim_lost');

    // The second lease runs out too: the next claim, on either instance, finds it past maxAttempts.
    await until(async () => {
      await claim(a);
      return (await deadLetters(b.url)).count === 1;
    }, 15_000);
    for (const instance of [a, b]) {
      expect(await deadLetters(instance.url)).toMatchObject({
        count: 1,
        deadletters: [{ id: output!.id, attempts: 2, lastError: 'lease ran out 2 times' }],
      });
      expect(await delivery(instance.url, output!.id)).toMatchObject({ state: 'dead' });
    }
    expect((await answer(b, again.claims[0]!.id, 'ack')).status).toBe(409);

    const retried = await postJson(`${b.url}/v1/deadletters/${output!.id}/retry`, {});
    expect(retried.body).toEqual({ requeued: 1 });
    const [offered] = (await claim(a)).claims;
    expect(offered).toMatchObject({ attempt: 1, output: { id: output!.id } });
    expect((await answer(b, offered!.id, 'ack')).body).toEqual({ acked: true });
    expect(await delivery(a.url, output!.id)).toMatchObject({ state: 'delivered', attempts: 1 });
    expect((await deadLetters(a.url)).count).toBe(0);
  });

  it('offers on B, after leaseMs, what an instance process killed with SIGKILL handed out; nothing acked is lost or offered twice', async () => {
    const url = store();
    const keyPrefix = prefix();
    const port = await freePort();
    const a = `http://127.0.0.1:${port}`;
    const child = await startChild(
      tempDir().path,
      port,
      claimsEnv(url, keyPrefix, { leaseMs: 1_000, maxAttempts: 10 }),
    );
    children.push(child);
    const b = await startService(claimsSettings(url, keyPrefix, { leaseMs: 1_000 }));
    services.push(b);

    const outputs = [...(await post(b, b, 'cli:a', ['acked'])), ...(await post(b, b, 'cli:b', ['held']))];
    const polled = await postJson(`${a}/v1/claims?max=10&waitMs=0`, {});
    expect(polled.status, JSON.stringify(polled.body)).toBe(200);
    const taken = (polled.body as { claims: ClaimBody[] }).claims;
    expect(taken.map((c) => c.output.content).sort()).toEqual(['acked', 'held']);
    const acked = taken.find((c) => c.output.content === 'acked')!;
    const held = taken.find((c) => c.output.content === 'held')!;
    const ack = await postJson(`${a}/v1/claims/${acked.id}/ack`, {});
    expect(ack.body).toEqual({ acked: true });
    child.kill('SIGKILL');
    await until(() => child.signalCode === 'SIGKILL');

    const again = await claim(b, 'max=10&waitMs=30000');
    expect(again.claims).toMatchObject([{ attempt: 2, output: { id: held.output.id, content: 'held' } }]);
    expect(again.claims[0]!.leaseUntil - 1_000).toBeGreaterThanOrEqual(held.leaseUntil);
    expect((await answer(b, held.id, 'ack')).status).toBe(409);
    expect((await answer(b, again.claims[0]!.id, 'ack')).body).toEqual({ acked: true });

    expect((await claim(b)).status).toBe(204);
    const states = await Promise.all(outputs.map((output) => delivery(b.url, output.id)));
    expect(states).toMatchObject([
      { state: 'delivered', attempts: 1 },
      { state: 'delivered', attempts: 2 },
    ]);
    expect((await deadLetters(b.url)).count).toBe(0);
  });

  it('keeps a claim taken on A through a restart of A: the restarted A takes its ack, and nothing is offered twice', async () => {
    const url = store();
    const keyPrefix = prefix();
    const settings = claimsSettings(url, keyPrefix);
    const [a, b] = await twoInstances(services, url, keyPrefix);
    const outputs = await post(a, b, 'cli:a', ['before', 'after']);
    const [taken] = (await claim(a)).claims;
    await services.splice(services.indexOf(a), 1)[0]!.stop();

    const restarted = await startService(settings);
    services.push(restarted);
    expect((await Promise.all([claim(restarted), claim(b)])).map((poll) => poll.status)).toEqual([204, 204]);
    expect(await delivery(restarted.url, taken!.output.id)).toMatchObject({ claimed: { attempt: 1 } });
    expect((await answer(restarted, taken!.id, 'ack')).body).toEqual({ acked: true });
    const [next] = (await claim(b)).claims;
    expect(next).toMatchObject({ attempt: 1, output: { id: outputs[1]!.id, content: 'after' } });
    expect((await answer(restarted, next!.id, 'ack')).body).toEqual({ acked: true });
    expect(await Promise.all(outputs.map((output) => delivery(b.url, output.id)))).toMatchObject([
      { state: 'delivered', attempts: 1 },
      { state: 'delivered', attempts: 1 },
    ]);
  });
});
