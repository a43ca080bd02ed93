import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, tempDir, until } from '../support/helpers.js';
import { freePort } from '../support/net.js';
import { startChild } from '../support/child.js';
import { readEvents } from '../support/sse.js';
import { REAL_TIME_WINDOW_ENV } from '../support/windows.js';

/* The service process on SQLite in mention mode: what it kept as context survives kill -9. */
describe('context through kill -9', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });

  const env = {
    ...REAL_TIME_WINDOW_ENV,
    INTAKE_ACTIVATION_GROUP: 'mention',
    INTAKE_ACTIVATION_WAKE_WORDS: 'bot',
  };
  const say = (url: string, id: string, sender: string, content: string) =>
    postJson(`${url}/webhooks/generic`, {
      id,
      sessionKey: 'cli:group:team',
      conversation: { type: 'group', id: 'team' },
      sender: { id: sender },
      content,
    });
  const kept = async (url: string) =>
    ((await (await fetch(`${url}/v1/conversations/cli%3Agroup%3Ateam`)).json()) as { context: unknown[] }).context
      .length;

  it('carries the chatter kept before the kill in the first output after the restart, once', async () => {
    const dir = tempDir().path;
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = await startChild(dir, port, env);
    children.push(first);
    expect((await say(url, 'm1', 'u1', 'hello')).status).toBe(200);
    expect((await say(url, 'm2', 'u2', 'anyone')).status).toBe(200);
    await until(async () => (await kept(url)) === 2, 10_000);
    // Acknowledged but still in its buffer when the process dies: kept as context after the restart.
    expect((await say(url, 'm3', 'u3', 'still here')).status).toBe(200);
    first.kill('SIGKILL');
    await once(first, 'exit');

    const second = await startChild(dir, port, env);
    children.push(second);
    await until(async () => (await kept(url)) === 3, 10_000);
    expect((await say(url, 'm4', 'u4', 'bot, catch me up')).status).toBe(200);
    const [frame] = await readEvents(`${url}/v1/events?after=0`, 1, { timeoutMs: 10_000 });
    expect(frame?.data).toMatchObject({ trigger: 'wake', content: 'bot, catch me up', contextDropped: 0 });
    const context = (frame?.data as { context: Array<{ content: string }> }).context;
    expect(context.map((message) => message.content)).toEqual(['hello', 'anyone', 'still here']);
    expect(await kept(url)).toBe(0);
  });
});
