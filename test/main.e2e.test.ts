import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, tempDir, until } from './support/helpers.js';
import { freePort } from './support/net.js';
import { runMain, startChild } from './support/child.js';
import { readEvents } from './support/sse.js';
import { REAL_TIME_WINDOW_ENV } from './support/windows.js';

describe('the service process', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('loses no acknowledged message to kill -9: open buffers come out after restart', async () => {
    const dir = tempDir().path;
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // A buffer keeps the rule it was opened with, across a restart too: a 2 s window that runs
    // out while the service is down (killed right after the answers, back about a second later).
    const first = await startChild(dir, port, {
      INTAKE_DEBOUNCE_WINDOW_MS: '2000',
      INTAKE_DEBOUNCE_MAX_WAIT_MS: '4000',
      INTAKE_DEBOUNCE_MAX_MESSAGES: '10',
    });
    children.push(first);
    for (const session of ['a', 'b', 'c']) {
      for (const part of ['one', 'two']) {
        const res = await postJson(`${url}/webhooks/generic`, {
          id: `${session}-${part}`,
          sessionKey: `cli:${session}`,
          content: part,
        });
        expect(res.status).toBe(200);
      }
    }
    first.kill('SIGKILL');
    await once(first, 'exit');

    const second = await startChild(dir, port);
    children.push(second);
    const frames = await readEvents(`${url}/v1/events?after=0`, 3, { timeoutMs: 10_000 });
    expect(frames.map((f) => [f.data.sessionKey, f.data.content]).sort()).toEqual([
      ['cli:a', 'one two'],
      ['cli:b', 'one two'],
      ['cli:c', 'one two'],
    ]);
    // Claims survived too: a retry of an acknowledged message is still a duplicate.
    expect(
      (await postJson(`${url}/webhooks/generic`, { id: 'a-one', sessionKey: 'cli:a', content: 'one' })).body.duplicates,
    ).toBe(1);
    second.kill('SIGKILL');
  });

  it('keeps messages held for an agent turn through kill -9: released once after restart, in order', async () => {
    const dir = tempDir().path;
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = { INTAKE_TURNS_MODE: 'collect', ...REAL_TIME_WINDOW_ENV };
    const turnOf = async () =>
      (await (await fetch(`${url}/v1/sessions/cli%3Aa/turn`)).json()) as {
        open: boolean;
        outputId?: string;
        held: number;
      };
    const first = await startChild(dir, port, env);
    children.push(first);
    await postJson(`${url}/webhooks/generic`, { id: 'k1', sessionKey: 'cli:a', content: 'first' });
    const [opened] = await readEvents(`${url}/v1/events?after=0`, 1, { timeoutMs: 30_000 });
    await postJson(`${url}/webhooks/generic`, { id: 'k2', sessionKey: 'cli:a', content: 'second' });
    await until(async () => (await turnOf()).held === 1, 30_000);
    await postJson(`${url}/webhooks/generic`, { id: 'k3', sessionKey: 'cli:a', content: 'third' });
    await until(async () => (await turnOf()).held === 2, 30_000);
    first.kill('SIGKILL');
    await once(first, 'exit');

    const second = await startChild(dir, port, env);
    children.push(second);
    expect(await turnOf()).toMatchObject({ open: true, outputId: opened!.data.id, held: 2 });
    expect((await postJson(`${url}/v1/turns/${String(opened!.data.id)}/done`, {})).body).toMatchObject({
      closed: true,
      released: 2,
    });
    const frames = await readEvents(`${url}/v1/events?after=0`, 2, { timeoutMs: 30_000 });
    expect(frames.map((f) => [f.data.content, f.data.followsUp])).toEqual([
      ['first', undefined],
      ['second third', opened!.data.id],
    ]);
    // Once: a second done releases nothing, and the outbox holds the two outputs only.
    expect((await postJson(`${url}/v1/turns/${String(opened!.data.id)}/done`, {})).body).toMatchObject({
      closed: false,
    });
    await until(async () => (await turnOf()).held === 0, 30_000);
    second.kill('SIGKILL');
    await once(second, 'exit');
    const db = new Database(join(dir, 'data/intake.db'), { readonly: true });
    const rows = db.prepare('SELECT body FROM outbox ORDER BY seq').all() as Array<{ body: string }>;
    db.close();
    expect(rows.map((r) => JSON.parse(r.body).content)).toEqual(['first', 'second third']);
    // Two process starts and a kill: a loaded machine takes longer than the default test timeout.
  }, 120_000);

  it('flushes every open buffer on SIGTERM and exits 0', async () => {
    const dir = tempDir().path;
    const port = await freePort();
    const child = await startChild(dir, port, {
      INTAKE_DEBOUNCE_WINDOW_MS: '60000',
      INTAKE_DEBOUNCE_MAX_WAIT_MS: '120000',
    });
    children.push(child);
    await postJson(`http://127.0.0.1:${port}/webhooks/generic`, { sessionKey: 'cli:t', content: 'bye' });
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    const db = new Database(join(dir, 'data/intake.db'), { readonly: true });
    const rows = db.prepare('SELECT body FROM outbox').all() as Array<{ body: string }>;
    const parts = db.prepare('SELECT count(*) AS n FROM parts').get() as { n: number };
    db.close();
    expect(rows.map((r) => JSON.parse(r.body).content)).toEqual(['bye']);
    expect(parts.n).toBe(0);
  });

  it('refuses to start on a bad setting and names it', async () => {
    const service = runMain(tempDir().path, { INTAKE_DEBOUNCE_MEDIA: 'some', INTAKE_DRAIN_MS: '0' });
    children.push(service.child);
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(/debounce\.media \(from INTAKE_DEBOUNCE_MEDIA\)/);
  });
});
