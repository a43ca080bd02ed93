import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { freePort, readEvents, startChild, tempDir, until } from '../helpers.js';

/*
 * A OneBot reverse socket when the service process ends: a stop (SIGTERM) records every frame
 * the bot sent before it read the close; a crash (kill -9) loses the frames not yet recorded,
 * which is what docs/channels.md says a socket can lose.
 */

const channel = { id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok' };
/** 20 users, so the frames spread over sessions as a busy group's would. */
const frame = (id: number) => JSON.stringify({
  time: 1718000001, self_id: 10001000, post_type: 'message', message_type: 'private', sub_type: 'friend', message_id: id, user_id: 1000 + (id % 20),
  sender: { user_id: 1000 + (id % 20), nickname: 'u' }, message: [{ type: 'text', data: { text: `m${id} ${'x'.repeat(200)}` } }], raw_message: `m${id}`,
});

function connect(port: number): Promise<WebSocket> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/webhooks/qq`, { headers: { authorization: 'Bearer tok', 'x-self-id': '10001000' } });
  socket.on('error', () => undefined); // a killed service resets the socket
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) => reject(new Error(`refused ${response.statusCode}`)));
  });
}

/**
 * A bot streaming frames 1, 2, ... as fast as it can, `burst` per turn of its event loop, while
 * its socket is open and until `limit`. `sent` counts the frames handed to the socket while open.
 */
function stream(socket: WebSocket, limit: number, burst = 100): { sent(): number; done: Promise<void> } {
  let sent = 0;
  const done = new Promise<void>((resolve) => {
    const next = () => {
      for (let i = 0; i < burst && sent < limit && socket.readyState === WebSocket.OPEN; i++) socket.send(frame(++sent));
      if (sent < limit && socket.readyState === WebSocket.OPEN) setImmediate(next);
      else resolve();
    };
    next();
  });
  return { sent: () => sent, done };
}

/** The message ids in the store, in order: the restarted service flushes what was open, then its event stream lists every output. */
async function recordedIds(port: number): Promise<number[]> {
  const url = `http://127.0.0.1:${port}`;
  await until(async () => {
    const { debounce } = (await (await fetch(`${url}/v1/stats`)).json()) as { debounce: { open: number; flushing: number } };
    return debounce.open === 0 && debounce.flushing === 0;
  }, 30_000);
  const ids: number[] = [];
  for (let after = 0, page = 1000; page === 1000;) {
    const frames = await readEvents(`${url}/v1/events?after=${after}`, 1000, { timeoutMs: 1500 });
    page = frames.length;
    for (const { id, data } of frames) {
      after = Number(id);
      for (const messageId of data.messageIds as string[]) ids.push(Number(messageId.split(':')[1]));
    }
  }
  return ids.sort((a, b) => a - b);
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('a OneBot reverse socket when the service process ends', () => {
  const children: ChildProcess[] = [];
  const sockets: WebSocket[] = [];
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.terminate();
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  async function service(dir: string, port: number): Promise<{ child: ChildProcess; log(): string }> {
    const child = await startChild(dir, port);
    children.push(child);
    let log = '';
    child.stdout?.on('data', (chunk: Buffer) => { log += chunk.toString(); });
    return { child, log: () => log };
  }

  describe('regression: SIGTERM refused the frames still queued on a socket that had closed (503 shutting_down)', () => {
    it('records every frame a streaming bot sent before it read the close, and refuses none', async () => {
      const dir = tempDir().path;
      writeFileSync(join(dir, 'intake.config.json'), JSON.stringify({ channels: [channel] }));
      const port = await freePort();
      const first = await service(dir, port);
      const socket = await connect(port);
      sockets.push(socket);
      const bye = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
      const bot = stream(socket, 3000);
      await until(() => bot.sent() >= 1000);
      first.child.kill('SIGTERM');
      await bot.done;
      expect(await once(first.child, 'exit')).toEqual([0, null]);
      expect(await bye).toBe(1001);
      expect(first.log()).not.toContain('shutting_down');
      expect(first.log()).not.toContain('delivery rejected');

      await service(dir, port);
      const ids = await recordedIds(port);
      expect(ids.length).toBe(bot.sent());
      expect(ids).toEqual(upTo(bot.sent()));
    }, 60_000);
  });
});
