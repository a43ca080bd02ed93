import { afterEach, describe, expect, it } from 'vitest';
import { postJson, type Running, startService, until } from '../support/helpers.js';
import { sharedStoresForTests } from '../store/redis-cluster.js';
import { REAL_TIME_WINDOW } from '../support/windows.js';

/*
 * Activation and context on two real instances sharing one real redis-server, or a real
 * 3-master Redis Cluster: what one instance keeps as context, the other's output carries; an
 * override set through one applies on the other.
 */

const stores = sharedStoresForTests();
const services: Running[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.stop()));
});

async function instance(store: string, prefix: string, extra: Record<string, unknown> = {}): Promise<Running> {
  const service = await startService({
    store,
    redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
    debounce: REAL_TIME_WINDOW,
    activation: { group: 'mention', wakeWords: ['bot'] },
    ...extra,
  });
  services.push(service);
  return service;
}

const GROUP = { type: 'group', id: 'team' };
const say = (service: Running, id: string, sender: string, content: string) =>
  postJson(`${service.url}/webhooks/generic`, {
    id,
    sessionKey: 'cli:group:team',
    conversation: GROUP,
    sender: { id: sender },
    content,
  });
const outbox = async (service: Running) =>
  (await service.intake.store.outboxAfter(0, 100)).map(
    (record) => JSON.parse(record.body) as { content: string; trigger: string; context: Array<{ content: string }> },
  );
const kept = async (service: Running) =>
  ((await (await fetch(`${service.url}/v1/conversations/cli%3Agroup%3Ateam`)).json()) as { context: unknown[] }).context
    .length;

describe.each(stores.forms)('activation on several instances on %s', (_name, store) => {
  it('carries on one instance the context the other kept, each message once, and follows an override set on either', async () => {
    const prefix = `act${process.pid}${Math.floor(Math.random() * 1e6)}`;
    const [a, b] = await Promise.all([instance(store(), prefix), instance(store(), prefix)]);
    await say(a, 'm1', 'u1', 'hello');
    await until(async () => (await kept(b)) === 1);
    await say(b, 'm2', 'u2', 'anyone here');
    await until(async () => (await kept(a)) === 2);
    await say(a, 'm3', 'u3', 'bot, summarize please');
    await until(async () => (await outbox(b)).length === 1);
    const [first] = await outbox(b);
    expect(first).toMatchObject({ trigger: 'wake', content: 'bot, summarize please' });
    expect(first!.context.map((message) => message.content)).toEqual(['hello', 'anyone here']);
    expect(await kept(a)).toBe(0);

    const put = await fetch(`${a.url}/v1/conversations/cli%3Agroup%3Ateam/activation`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ group: 'always' }),
    });
    expect(put.status).toBe(200);
    await say(b, 'm4', 'u1', 'just chatting');
    await until(async () => (await outbox(a)).length === 2);
    expect((await outbox(a))[1]).toMatchObject({ trigger: 'always', content: 'just chatting', context: [] });
  });

  it('spends one budget for the deployment: a sender over it on either instance is held, merged, and let through once', async () => {
    const prefix = `bud${process.pid}${Math.floor(Math.random() * 1e6)}`;
    const budgets = [{ per: 'sender', limit: 1, windowMs: 2000, action: 'merge' }];
    const [a, b] = await Promise.all([instance(store(), prefix, { budgets }), instance(store(), prefix, { budgets })]);
    await say(a, 'b1', 'u1', 'bot one');
    await until(async () => (await outbox(b)).length === 1);
    await say(b, 'b2', 'u1', 'bot two');
    await say(a, 'b3', 'u1', 'bot three');
    // Over the budget on both instances: held together until the window lets one more through.
    await until(async () => (await outbox(a)).length === 2, 10_000);
    const out = await outbox(b);
    expect(out.map((output) => output.content)).toEqual(['bot one', expect.stringContaining('bot two')]);
    expect(out[1]!.content).toContain('bot three');
    // Held because instance A's output spent the sender's budget: the trail says so.
    const trace = (await (await fetch(`${b.url}/v1/trace/b2`)).json()) as { arrivals: Array<{ verdict: string }> };
    expect(trace.arrivals.map((arrival) => arrival.verdict)).toContain('over_budget');
  });
});
