import { describe, expect, it } from 'vitest';
import { postJson, startService, until, useTeardown, type Running } from '../../support/helpers.js';
import { useRedis } from '../../support/redis.js';
import { REAL_TIME_WINDOW } from '../../support/windows.js';
import { fakeMilky, groupMessage, text } from './fake-milky.js';

/*
 * Two instances on one real redis-server share one Milky channel: exactly one holds the event
 * socket (the channel's lease); a stopped holder hands it to the other.
 */

const SELF = 10001;
const redis = useRedis();
let tests = 0;
const { services, cleanups } = useTeardown();

async function instance(prefix: string, url: string): Promise<Running> {
  const service = await startService({
    store: redis.url,
    redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
    debounce: REAL_TIME_WINDOW,
    channels: [
      { id: 'milky', adapter: 'milky', url, accessToken: 'tok', leaseMs: 900, reconnectMinMs: 20, reconnectMaxMs: 200 },
    ],
  });
  services.push(service);
  return service;
}

const listed = async (service: Running) =>
  ((await (await fetch(`${service.url}/v1/connections`)).json()) as { connections: Array<Record<string, unknown>> })
    .connections;

describe('a Milky channel on several instances', () => {
  it('is dialled by exactly one instance, every instance sends its actions, and a stopped holder hands it over', async () => {
    const prefix = `milky${process.pid}-${++tests}`;
    const milky = await fakeMilky({ selfId: SELF, token: 'tok' });
    cleanups.push(() => milky.close());
    const [a, b] = await Promise.all([instance(prefix, milky.url), instance(prefix, milky.url)]);
    await until(() => milky.open === 1);
    milky.event('message_receive', groupMessage(1, [text('who holds it')]));
    await until(async () => (await listed(a)).some((view) => view.botId === String(SELF) && view.state === 'open'));
    const [view] = await listed(a);
    const [holder, other] = view?.instance === a.intake.instance ? [a, b] : [b, a];

    // Actions go to the server's API from any instance: no socket needed.
    const answer = await postJson(`${other.url}/v1/channels/milky/actions/get_login_info`, {});
    expect(answer).toMatchObject({ status: 200, body: { status: 'ok' } });

    const before = milky.state.connections;
    services.splice(services.indexOf(holder), 1);
    await holder.stop();
    await until(() => milky.state.connections === before + 1 && milky.open === 1, 10_000);
    await until(async () =>
      (await listed(other)).some((entry) => entry.state === 'open' && entry.instance === other.intake.instance),
    );
    expect(milky.state.mostAtOnce).toBe(1);
  }, 30_000);
});
