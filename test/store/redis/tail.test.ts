import { afterEach, describe, expect, it } from 'vitest';
import { StreamHub } from '../../../src/http/event-stream.js';
import { RedisStore } from '../../../src/store/redis/redis.js';
import { until } from '../../support/helpers.js';
import { silent } from '../../support/logger.js';
import { useRedis } from '../../support/redis.js';
import { commitOne } from './fixtures.js';
import { follow, serveStream } from '../../support/sse.js';
import { relay } from './link.js';

/*
 * Instance A's link to Redis hangs while instance B commits and trims: when it comes back, A's
 * live tail reads on from its last id, past records that were trimmed meanwhile.
 */

const redis = useRedis();
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(url: string): Promise<RedisStore> {
  const store = await RedisStore.open(url, { keyPrefix: 'gap', commandTimeoutMs: 3000, tailCheckMs: 100 });
  cleanups.push(() => store.close());
  return store;
}

describe('the live tail across a trim it could not see', () => {
  it("tells a live client of the records trimmed while its instance's link hung (event: gap), then goes on", async () => {
    const link = await relay(redis.port);
    cleanups.push(() => link.close());
    const [a, b] = await Promise.all([open(link.url), open(redis.url)]);
    const hub = new StreamHub({ logger: silent, now: () => 0 });
    const served = await serveStream(hub.events(a));
    cleanups.push(() => served.close());
    const client = follow(served.url);
    cleanups.push(() => client.close());
    expect(await client.status).toBe(200);
    await until(() => hub.count === 1);
    await until(async () => (await a.lastSeq()) === 0); // live from seq 0

    for (let i = 1; i <= 5; i++) await commitOne(b, `r${i}`);
    await until(() => client.frames.length === 5);
    link.hang();
    for (let i = 6; i <= 300; i++) await commitOne(b, `r${i}`);
    // B's retention keeps the newest 50 (nothing of A's streams is known to B).
    await b.trimOutbox(0, 50, Number.MAX_SAFE_INTEGER);
    link.resume();

    // (An id is `<seq>@<life>`: the seq is what counts here.)
    const seq = (frame: { id: string } | undefined) => Number(frame?.id.split('@')[0]);
    await until(
      () => seq(client.frames.at(-1)) === 300,
      10_000,
      () => client.frames.slice(-3),
    );
    const gaps = client.frames.filter((frame) => frame.event === 'gap');
    expect(gaps).toHaveLength(1);
    const at = client.frames.indexOf(gaps[0]!);
    expect(gaps[0]!.data).toEqual({ after: seq(client.frames[at - 1]), next: 251 });
    expect(seq(client.frames[at + 1])).toBe(251);
    expect(client.frames.slice(at + 1).map(seq)).toEqual(Array.from({ length: 50 }, (_, i) => 251 + i));
  });
});
