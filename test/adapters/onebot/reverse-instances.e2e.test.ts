import { afterEach, describe, expect, it } from 'vitest';
import { KEEP_CLOSED_MS } from '../../../src/connections/roster.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { useRedis } from '../../support/redis.js';
import { closed, connect, napcat } from '../../connections/reverse-bot.js';

describe('regression: closed connections pile up in what each instance publishes to Redis', () => {
  const redis = useRedis();
  const services: Running[] = [];
  afterEach(async () => {
    for (const running of services.splice(0)) await running.stop();
  });

  it("lets another instance on the redis-server see at most 100 of a channel's closed connections, and none 10 minutes after they closed", async () => {
    const config = {
      store: redis.url,
      redis: { keyPrefix: `roster${process.pid}` },
      channels: [{ id: 'qq-ws', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok' }],
    };
    const clock = new ManualClock();
    const a = await startService(config, { clock });
    services.push(a);
    const b = await startService(config);
    services.push(b);
    const onA = async () => a.intake.connections();
    // What B lists is what A published: B holds no socket.
    const onB = async () => (await b.intake.connections()).filter((view) => view.instance !== b.intake.instance);
    // A publishes 50 ms after a change and every 2 s of its clock, the next once the last is written.
    const publishedByA = async () => {
      await clock.advance(2000);
      return onB();
    };
    // 150 bots come and go on A, 25 at a time.
    for (let batch = 0; batch < 6; batch++) {
      const sockets = await Promise.all(
        Array.from({ length: 25 }, (_, i) => connect(a, napcat(String(70_000 + batch * 25 + i)))),
      );
      await Promise.all(
        sockets.map((socket) => {
          const bye = closed(socket);
          socket.close();
          return bye;
        }),
      );
      await until(async () => (await onA()).every((view) => view.state === 'closed'));
      await clock.advance(1000);
    }
    await clock.advance(2000);
    await until(
      async () => {
        const views = await onB();
        return views.length === 100 && views.every((view) => view.state === 'closed');
      },
      10_000,
      async () => (await onB()).length,
    );
    // The 100 closed last: the first 50 bots are gone from the publication too.
    expect((await onB()).map((view) => Number(view.botId)).sort((x, y) => x - y)[0]).toBe(70_050);
    // A's publication on the redis-server: every 2 s, about 300 bytes a connection.
    const published = await redis.admin.hget(`{roster${process.pid}}:conns`, a.intake.instance);
    expect(published?.length).toBeLessThan(100 * 400);

    // Ten minutes after they closed, A publishes none of them, and B lists none.
    await clock.advance(KEEP_CLOSED_MS);
    await until(async () => (await publishedByA()).length === 0, 10_000);
    expect(await onA()).toEqual([]);
  });
});
