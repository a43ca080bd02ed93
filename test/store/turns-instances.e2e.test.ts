import { afterEach, describe, expect, it } from 'vitest';
import { postJson, type Running, startService, until } from '../support/helpers.js';
import { sharedStoresForTests } from './redis-cluster.js';
import { REAL_TIME_WINDOW } from '../support/windows.js';

/* Agent turns on two real instances sharing one real redis-server, or a real 3-master Redis Cluster. */

const stores = sharedStoresForTests();
const services: Running[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.stop()));
});

async function instance(store: string, prefix: string): Promise<Running> {
  const service = await startService({
    store,
    redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
    debounce: { ...REAL_TIME_WINDOW, maxMessages: 10 },
    turns: { mode: 'collect' },
  });
  services.push(service);
  return service;
}

const say = (service: Running, id: string, content: string) =>
  postJson(`${service.url}/webhooks/generic`, { id, sessionKey: 'cli:a', sender: { id: 'u' }, content });
const outbox = async (service: Running) =>
  (await service.intake.store.outboxAfter(0, 100)).map(
    (record) => JSON.parse(record.body) as { id: string; content: string; followsUp?: string },
  );
const held = async (service: Running) => (await service.intake.turn('cli:a')).held;

describe.each(stores.forms)('agent turns on several instances on %s', (_name, store) => {
  it('releases on instance B what instance A holds, once; concurrent dones on both close the turn once', async () => {
    const prefix = `turns${process.pid}`;
    const [a, b] = await Promise.all([instance(store(), prefix), instance(store(), prefix)]);
    await say(a, 'm1', 'first');
    await until(async () => (await outbox(b)).length === 1);
    const [first] = await outbox(b);
    await say(a, 'm2', 'second');
    await until(async () => (await held(b)) === 1);
    expect(await b.intake.turn('cli:a')).toMatchObject({ open: true, outputId: first!.id });

    const done = await postJson(`${b.url}/v1/turns/${first!.id}/done`, {});
    expect(done.body).toMatchObject({ closed: true, released: 1 });
    await until(async () => (await outbox(a)).length === 2);
    const second = (await outbox(a))[1]!;
    expect(second).toMatchObject({ content: 'second', followsUp: first!.id });

    // A third message held by the second turn, and a done for it on each instance at once.
    await say(b, 'm3', 'third');
    await until(async () => (await held(a)) === 1);
    const answers = await Promise.all(
      [a, b].map((service) => postJson(`${service.url}/v1/turns/${second.id}/done`, {})),
    );
    expect(answers.map((answer) => answer.body.closed).sort()).toEqual([false, true]);
    await until(async () => (await outbox(a)).length === 3);
    await Promise.all([a, b].map((service) => service.intake.settle()));
    const all = await outbox(b);
    expect(all.map((output) => [output.content, output.followsUp])).toEqual([
      ['first', undefined],
      ['second', first!.id],
      ['third', second.id],
    ]);
    expect(await held(a)).toBe(0);
  });
});
