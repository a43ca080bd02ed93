import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startChild, startService, tempDir, until, type Running } from '../helpers.js';
import { type RedisServer, startRedis } from '../store/redis-server.js';
import { BOT_TOKEN, fakeGateway } from './fake-gateway.js';

/*
 * Two instances on one real redis-server share one Discord channel: one holds the Gateway
 * connection (the channel's lease); when it is killed the survivor takes it over and RESUMEs
 * the session from the cursor in the store; what the Gateway replays is not emitted twice.
 */

let redis: RedisServer;
const services: Running[] = [];
const children: ChildProcess[] = [];
const cleanups: Array<() => unknown> = [];
beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis.stop(); });
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(services.splice(0).map((service) => service.stop()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const channel = (url: string) => ({ id: 'dc', adapter: 'discord', botToken: BOT_TOKEN, gatewayUrl: url, leaseMs: 900, reconnectMinMs: 20, reconnectMaxMs: 200 });

describe('a Discord channel on several instances', () => {
  it('is taken over by a survivor when its holder is killed (kill -9), which resumes the session; nothing twice', async () => {
    const prefix = `dc${process.pid}`;
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    // The Gateway replays everything on a resume: the survivor must refuse what the victim recorded.
    gateway.state.replayAll = true;
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    writeFileSync(join(dir.path, 'intake.config.json'), JSON.stringify({ channels: [channel(gateway.url)] }));
    const victim = await startChild(dir.path, await freePort(), {
      INTAKE_STORE: redis.url, INTAKE_REDIS_KEY_PREFIX: prefix, INTAKE_DEBOUNCE_WINDOW_MS: '50', INTAKE_DEBOUNCE_MAX_WAIT_MS: '500',
    });
    children.push(victim);
    await until(() => gateway.identifies() === 1 && gateway.open() === 1, 10_000);
    const survivor = await startService({ store: redis.url, redis: { keyPrefix: prefix, commandTimeoutMs: 3000 }, debounce: { windowMs: 50, maxWaitMs: 500 }, channels: [channel(gateway.url)] });
    services.push(survivor);
    for (let i = 1; i <= 10; i++) gateway.dispatch({ id: String(i), channel_id: String(i), content: `message ${i}` });
    await until(async () => (await survivor.intake.store.outboxAfter(0, 100)).length === 10, 10_000);
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await until(() => gateway.resumes().length === 1 && gateway.open() === 1, 10_000);
    expect(gateway.resumes()[0]?.d).toMatchObject({ token: BOT_TOKEN, session_id: 'session-1' });
    expect(gateway.identifies()).toBe(1);
    gateway.dispatch({ id: '11', channel_id: '11', content: 'after the takeover' });
    await until(async () => (await survivor.intake.store.outboxAfter(0, 100)).length === 11, 10_000);
    const ids = (await survivor.intake.store.outboxAfter(0, 100)).flatMap((output) => output.messageIds ?? []);
    expect(ids.sort((a, b) => Number(a) - Number(b))).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11']);
    expect(survivor.intake.metrics.channelStats().dc?.deduped).toBe(10);
  }, 40_000);
});
