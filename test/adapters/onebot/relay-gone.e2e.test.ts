import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { postJson, startService, tempDir, until, type Running } from '../../support/helpers.js';
import { freePort } from '../../support/net.js';
import { startChild } from '../../support/child.js';
import { useRedis } from '../../support/redis.js';

/*
 * Two instances on one real redis-server: a bot holds a reverse socket to one of them, which
 * dies (kill -9). Until its published connections expire the other still lists the bot; an
 * action relayed to the dead instance reaches no one and is answered at once, not timed out.
 */

const channel = { id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', actionTimeoutMs: 2000 };
const redis = useRedis();

describe('an action relayed to an instance that just died', () => {
  let child: ChildProcess | undefined;
  let survivor: Running | undefined;
  let socket: WebSocket | undefined;
  const dir = tempDir();
  afterAll(async () => {
    socket?.terminate();
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await survivor?.stop();
    dir.remove();
  });

  it('answers 404 bot_not_connected as soon as no instance received the relay', async () => {
    const prefix = `gone${process.pid}`;
    writeFileSync(join(dir.path, 'intake.config.json'), JSON.stringify({ channels: [channel] }));
    const port = await freePort();
    child = await startChild(dir.path, port, { INTAKE_STORE: redis.url, INTAKE_REDIS_KEY_PREFIX: prefix });
    survivor = await startService({
      store: redis.url,
      redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
      channels: [channel],
    });

    socket = new WebSocket(`ws://127.0.0.1:${port}/webhooks/qq`, {
      headers: { authorization: 'Bearer tok', 'x-self-id': '10001000' },
    });
    const bot = socket;
    bot.on('message', (data) => {
      const { echo } = JSON.parse(data.toString()) as { echo: string };
      bot.send(JSON.stringify({ status: 'ok', retcode: 0, data: { message_id: 1 }, echo }));
    });
    await new Promise((resolve, reject) => {
      bot.once('open', resolve);
      bot.once('error', reject);
    });
    const listed = async () =>
      ((await (await fetch(`${survivor!.url}/v1/connections`)).json()) as { connections: Array<{ state: string }> })
        .connections;
    await until(async () => (await listed()).some((view) => view.state === 'open'));
    // While the holder lives, the survivor relays to it.
    expect(
      await postJson(`${survivor.url}/v1/channels/qq/actions/send_private_msg`, { user_id: 1, message: 'hi' }),
    ).toMatchObject({ status: 200, body: { retcode: 0 } });

    child.kill('SIGKILL');
    await once(child, 'exit');
    // The dead instance's connection is still listed (it published it for seconds), yet nobody holds it.
    expect((await listed()).some((view) => view.state === 'open')).toBe(true);
    const answer = await postJson(`${survivor.url}/v1/channels/qq/actions/send_private_msg`, {
      user_id: 1,
      message: 'hi',
    });
    expect(answer).toMatchObject({ status: 404, body: { error: { code: 'bot_not_connected' } } });
    expect(answer.body.error.message).toMatch(/which no longer listens .*\(connected: none\)$/);
  }, 30_000);
});
