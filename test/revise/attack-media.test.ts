import { readdirSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PNG, serve, type TestServer } from '../support/servers.js';
import { until } from '../support/helpers.js';
import { A, GROUP, Harness, recall } from './attack-support.js';

/*
 * A recalled message's downloads (contract §13: "its downloaded media are deleted"), the recall
 * coming at each moment of the message's life: while it waits with its download done, while
 * its flush waits for a slow download, and after the download was kept a long while.
 */
describe('the downloads of a recalled message', () => {
  let h: Harness;
  let host: TestServer;
  const held: ServerResponse[] = [];
  beforeAll(async () => {
    host = await serve((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path === '/slow.png') held.push(res);
      else {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
      }
    });
  });
  afterAll(() => host.close());
  afterEach(async () => {
    for (const res of held.splice(0)) res.end(PNG);
    await h?.stop();
  });

  const start = (debounce = { windowMs: 1000, maxWaitMs: 3000 }) =>
    new Harness().start({ debounce, media: { allowHosts: [`127.0.0.1:${host.port}`], timeoutMs: 600_000 } });

  /** One bot delivers a member's picture. */
  const picture = (id: number, path: string) => ({
    time: 1_718_000_000 + id,
    self_id: A,
    post_type: 'message',
    message_type: 'group',
    sub_type: 'normal',
    message_id: id,
    group_id: GROUP,
    user_id: 7,
    sender: { user_id: 7, nickname: 'member 7' },
    message: [
      { type: 'text', data: { text: 'look' } },
      { type: 'image', data: { file: 'p.png', url: `http://127.0.0.1:${host.port}${path}?id=${id}` } },
    ],
  });

  /** Every file under the media folder. */
  const files = (): string[] => {
    const dir = join(h.service.dir, 'media');
    try {
      return readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name));
    } catch {
      return [];
    }
  };

  it('deletes the download of a message recalled while it waits, the download done', async () => {
    h = await start();
    await h.postOk(picture(1, '/a.png'));
    await until(() => files().length === 1);
    await h.postOk(recall(A, 1, 7));
    await h.flushed(2000);
    expect(await h.ofType('chat.processedMessage')).toEqual([]);
    await until(() => files().length === 0, 2000, files);
  });

  // The flush collects the downloads before its commit; the recall ends its lease and the
  // commit fails: the downloads stay for the next flush, which deletes the recalled part's.
  it('deletes the download of a message recalled while its flush waits for that download', async () => {
    h = await start();
    await h.postOk(picture(2, '/slow.png'));
    await host.arrived('/slow.png');
    await h.clock.advance(1100); // the flush begins and waits for the download
    await until(async () => (await h.service.intake.store.openBuffers()) === 1);
    await h.postOk(recall(A, 2, 7));
    for (const res of held.splice(0)) {
      res.setHeader('content-type', 'image/png');
      res.end(PNG);
    }
    // The download lands: the flush it waited for commits nothing (the recall ended its lease),
    // keeps the download for the next flush, which finds the message recalled and deletes it.
    await h.flushed(2000);
    expect(await h.ofType('chat.processedMessage')).toEqual([]);
    await until(() => files().length === 0, 2000, files);
  });

  // A finished download is kept for its flush past the longest wait a buffer can have (here a
  // window of 400 s): recalled after five minutes, its file is deleted when its batch flushes.
  it('deletes the download of a message recalled after waiting longer than five minutes', async () => {
    h = await start({ windowMs: 400_000, maxWaitMs: 600_000 });
    await h.postOk(picture(3, '/a.png'));
    await until(() => files().length === 1);
    await h.clock.advance(350_000);
    await h.postOk(recall(A, 3, 7));
    await h.flushed(60_000);
    expect(await h.ofType('chat.processedMessage')).toEqual([]);
    await until(() => files().length === 0, 2000, files);
  });
});
