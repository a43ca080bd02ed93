import { afterEach, describe, expect, it } from 'vitest';
import { outputOf } from '../../src/events/output.js';
import { postJson, type Running, startService, until } from '../support/helpers.js';
import { sharedStoresForTests } from '../store/redis-cluster.js';

/*
 * Second thoughts on two real instances sharing one real redis-server, or a real 3-master
 * Redis Cluster: bot A's copy of a group message reaches one instance, bot B's the other, and so
 * do their reports of its recall. The message never reaches the agent; once emitted, its recall
 * is told once; a takeover started on one instance holds the other's batches.
 */

const stores = sharedStoresForTests();
const services: Running[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.stop()));
});

const A = 10001;
const B = 20002;
const GROUP = 555;
// Instances on one redis-server share its clock, not a ManualClock: a window long enough that a
// message and its recall, posted back to back, meet inside it on a loaded machine.
const WINDOW = { windowMs: 1500, maxWaitMs: 3000 };

async function instance(store: string, prefix: string): Promise<Running> {
  const service = await startService({
    store,
    redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
    debounce: WINDOW,
    channels: [{ id: 'qq', adapter: 'onebot', namespace: 'qq', verify: false }],
  });
  services.push(service);
  return service;
}

const own = (bot: number, id: number) => (bot === A ? id : id + 50_000);
const message = (bot: number, id: number, text: string) => ({
  time: 1_718_000_000 + id,
  self_id: bot,
  post_type: 'message',
  message_type: 'group',
  sub_type: 'normal',
  message_id: own(bot, id),
  group_id: GROUP,
  user_id: 7,
  sender: { user_id: 7 },
  message: [{ type: 'text', data: { text } }],
});
const recall = (bot: number, id: number) => ({
  time: 1_718_000_100 + id,
  self_id: bot,
  post_type: 'notice',
  notice_type: 'group_recall',
  group_id: GROUP,
  user_id: 7,
  operator_id: 7,
  message_id: own(bot, id),
});
const post = async (service: Running, body: unknown) =>
  expect((await postJson(`${service.url}/webhooks/qq`, body)).status).toBeLessThan(300);
const outputs = async (service: Running) =>
  (await service.intake.store.outboxAfter(0, 100)).map(
    (record) => outputOf(record) as unknown as { type: string } & Record<string, unknown>,
  );

describe.each(stores.forms)('second thoughts on several instances on %s', (_name, store) => {
  it('never emits a message recalled inside its window, and tells a recall after emission once', async () => {
    const prefix = `rev${process.pid}${Math.floor(Math.random() * 1e6)}`;
    const [a, b] = await Promise.all([instance(store(), prefix), instance(store(), prefix)]);
    await post(a, message(A, 1, 'wrong group, sorry'));
    await post(b, message(B, 1, 'wrong group, sorry'));
    await post(b, recall(A, 1));
    await post(a, recall(B, 1));
    await post(a, message(A, 2, 'hello'));
    await until(async () => (await outputs(b)).some((output) => output.type === 'chat.processedMessage'), 10_000);
    // only the later message, and no notice of the recall
    expect((await outputs(b)).map((output) => [output.type, output.content])).toEqual([
      ['chat.processedMessage', 'hello'],
    ]);
    const [emitted] = await outputs(a);
    await post(b, recall(B, 2));
    await post(a, recall(A, 2));
    await until(async () => (await outputs(a)).length === 2, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a second one would have come by now
    const told = (await outputs(b)).filter((output) => output.type === 'chat.retracted');
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ outputId: emitted!.id, messageId: `${A}:2` });
  });

  it('holds a session taken over on one instance on the other, and ends it once', async () => {
    const prefix = `tko${process.pid}${Math.floor(Math.random() * 1e6)}`;
    const [a, b] = await Promise.all([instance(store(), prefix), instance(store(), prefix)]);
    const url = `${a.url}/v1/sessions/qq%3Agroup%3A${GROUP}/takeover`;
    const put = await fetch(url, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"holdMs":60000}',
    });
    expect(put.status).toBe(200);
    await post(b, message(A, 3, 'are you a bot?'));
    await until(async () => {
      const trace = (await (await fetch(`${b.url}/v1/trace/${A}:3`)).json()) as {
        arrivals: Array<{ verdict: string }>;
      };
      return trace.arrivals.some((arrival) => arrival.verdict === 'human_active');
    }, 10_000);
    await fetch(`${b.url}/v1/sessions/qq%3Agroup%3A${GROUP}/takeover`, {
      method: 'DELETE',
      headers: { 'x-requested-with': 'test' },
    });
    await post(a, message(A, 4, 'hello?'));
    await until(async () => (await outputs(a)).some((output) => output.type === 'chat.processedMessage'), 10_000);
    const all = await outputs(b);
    expect(all.filter((output) => output.type === 'chat.takeover').map((output) => output.active)).toEqual([
      true,
      false,
    ]);
    const [answered] = all.filter((output) => output.type === 'chat.processedMessage');
    expect(answered).toMatchObject({ content: 'hello?' });
    expect((answered!.context as Array<{ content: string }>).map((entry) => entry.content)).toEqual(['are you a bot?']);
  });
});
