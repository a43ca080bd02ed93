import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, until } from './support/helpers.js';
import { freePort } from './support/net.js';
import { run as start } from './support/child.js';
import { startRedis } from './support/redis.js';

const ROOT = process.cwd();
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  bin: Record<string, string>;
  scripts: Record<string, string>;
};
const BIN = join(ROOT, pkg.bin['agent-intake'] as string);

const readyz = (port: number) =>
  fetch(`http://127.0.0.1:${port}/readyz`).then(
    async (r) => ({ status: r.status, body: (await r.json()) as { problems: string[] } }),
    () => undefined,
  );
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the process: its bin, signals and drain period', () => {
  const children: ChildProcess[] = [];
  const pids: number[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const pid of pids.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  it('ships a bin that is the service entry, runnable as a script', () => {
    expect(pkg.bin['agent-intake']).toBe('dist/main.js');
    expect(readFileSync(BIN, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it('answers /readyz 503 during server.drainMs after SIGTERM while still taking deliveries; a second signal stops it', async () => {
    const port = await freePort();
    const service = start(process.execPath, [BIN], tempDir().path, {
      PORT: String(port),
      INTAKE_STORE: 'memory',
      INTAKE_DRAIN_MS: '600000',
      LOG_LEVEL: 'info',
    });
    children.push(service.child);
    await until(async () => (await readyz(port))?.status === 200, 10_000);
    service.child.kill('SIGTERM');
    await until(async () => (await readyz(port))?.status === 503, 10_000);
    expect((await readyz(port))?.body.problems).toEqual([
      'draining: stopping soon (server.drainMs), deliveries still taken',
    ]);
    const posted = await fetch(`http://127.0.0.1:${port}/webhooks/generic`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"sessionKey":"cli:drain","content":"still taken"}',
    });
    expect(posted.status).toBe(200);
    expect(service.child.exitCode).toBe(null);
    // The second signal cuts the drain short; the buffered message is flushed by the stop as usual.
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(service.stdout()).toContain('"msg":"stopped cleanly"');
  });

  it('says during the drain after Ctrl-C that a second one stops now, and stops on it', async () => {
    const port = await freePort();
    const service = start(process.execPath, [BIN], tempDir().path, {
      PORT: String(port),
      INTAKE_STORE: 'memory',
      INTAKE_DRAIN_MS: '600000',
      LOG_LEVEL: 'info',
    });
    children.push(service.child);
    await until(async () => (await readyz(port))?.status === 200, 10_000);
    service.child.kill('SIGINT');
    await until(() => service.stdout().includes('"msg":"draining:'), 10_000);
    expect(service.stdout()).toMatch(/"msg":"draining: [^"]* in 600 s \(server\.drainMs\); Ctrl-C again to stop now"/);
    // Ten minutes of drain left: only the second SIGINT can end it within the test.
    service.child.kill('SIGINT');
    expect(await service.exited).toBe(0);
    expect(service.stdout()).toContain('"msg":"stopped cleanly"');
  });

  it('stops node when `npm start` gets SIGTERM (the script execs node: nothing is left serving)', async () => {
    const port = await freePort();
    const media = tempDir().path;
    const npm = start('npm', ['start', '--silent'], ROOT, {
      PORT: String(port),
      INTAKE_STORE: 'memory',
      INTAKE_MEDIA_DIR: media,
      INTAKE_DRAIN_MS: '0',
      LOG_LEVEL: 'info',
      HOME: process.env.HOME ?? '/root',
    });
    children.push(npm.child);
    await until(async () => (await readyz(port))?.status === 200, 60_000);
    const pid = Number(/"pid":(\d+)/.exec(npm.stdout())?.[1]);
    expect(pid).toBeGreaterThan(0);
    pids.push(pid);
    npm.child.kill('SIGTERM');
    await npm.exited;
    await until(() => !alive(pid), 15_000);
    expect(npm.stdout()).toContain('"msg":"stopped cleanly"');
    expect(await readyz(port)).toBe(undefined);
  }, 90_000);

  it('never logs the Redis password of its store setting', async () => {
    const redis = await startRedis();
    const port = await freePort();
    const service = start(process.execPath, [BIN], tempDir().path, {
      PORT: String(port),
      INTAKE_STORE: redis.url.replace('redis://', 'redis://:s3cretpw@'),
      INTAKE_DRAIN_MS: '0',
      LOG_LEVEL: 'info',
    });
    children.push(service.child);
    try {
      await until(() => service.stdout().includes('agent-intake listening'), 15_000);
      expect(service.stdout()).toContain('"store":"redis://***@127.0.0.1:');
      expect(service.stdout() + service.stderr()).not.toContain('s3cretpw');
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
      await redis.stop();
    }
  });

  it('says in one line that a Redis store is down at start, without its password', async () => {
    const port = await freePort();
    const service = start(process.execPath, [BIN], tempDir().path, {
      PORT: String(await freePort()),
      INTAKE_STORE: `redis://:s3cretpw@127.0.0.1:${port}`,
    });
    children.push(service.child);
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(
      new RegExp(
        `^agent-intake: Redis store: cannot connect to redis://\\*\\*\\*@127\\.0\\.0\\.1:${port}: connect ECONNREFUSED [^\\n]*\\(store / INTAKE_STORE\\)\\n$`,
      ),
    );
    expect(service.stdout() + service.stderr()).not.toContain('s3cretpw');
  });
});
