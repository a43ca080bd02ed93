import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from './support/helpers.js';
import { sharedStoresForTests } from './store/redis-cluster.js';
import { REAL_TIME_WINDOW } from './support/windows.js';

/* `/v1/stats` on Redis (one server, or a 3-master Cluster): the deployment's counts, whichever instance answers. */

const stores = sharedStoresForTests();
const services: Running[] = [];

afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.stop()));
});

const stats = async (service: Running) => (await (await fetch(`${service.url}/v1/stats`)).json()) as any;

describe('/v1/stats of several instances', () => {
  it.each(stores.forms)(
    "counts every instance's deliveries on each, on %s, with a per-instance breakdown naming the instance that answered",
    async (_name, store) => {
      const prefix = `ops${process.pid}`;
      const file = {
        store: store(),
        redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
        debounce: { ...REAL_TIME_WINDOW, maxMessages: 10 },
      };
      const [a, b] = await Promise.all([startService(file), startService(file)]);
      services.push(a, b);
      await postJson(`${a.url}/webhooks/generic`, { id: 's1', sessionKey: 'cli:s', content: 'one' });
      await postJson(`${a.url}/webhooks/generic`, { id: 's2', sessionKey: 'cli:t', content: 'two' });
      await postJson(`${b.url}/webhooks/generic`, { id: 's1', sessionKey: 'cli:s', content: 'one' });
      // A publishes its counters every 2 s: B counts them once they are there.
      await until(async () => (await stats(b)).channels.generic?.received === 3, 10_000);
      const fromB = await stats(b);
      expect(fromB.instance).toBe(b.intake.instance);
      expect(fromB.channels.generic).toMatchObject({ received: 3, deduped: 1 });
      const lines = Object.fromEntries(fromB.instances.map((line: any) => [line.instance, line]));
      expect(lines[a.intake.instance]).toMatchObject({ live: true, counts: { received: 2 } });
      expect(lines[b.intake.instance]).toMatchObject({ live: true, counts: { received: 1, deduped: 1 } });
      await until(async () => (await stats(a)).channels.generic?.deduped === 1, 10_000);
      expect((await stats(a)).instance).toBe(a.intake.instance);
    },
  );

  it('has one line, this instance, on a store no other instance shares', async () => {
    const service = await startService();
    services.push(service);
    await postJson(`${service.url}/webhooks/generic`, { id: 'x1', sessionKey: 'cli:x', content: 'one' });
    const body = await stats(service);
    expect(body.instances).toEqual([
      expect.objectContaining({
        instance: service.intake.instance,
        live: true,
        counts: expect.objectContaining({ received: 1 }),
      }),
    ]);
    expect(body.channels.generic.received).toBe(1);
  });
});
