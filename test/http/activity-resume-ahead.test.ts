import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { errorResponder } from '../../src/http/errors.js';
import { StreamHub } from '../../src/http/event-stream.js';
import { inProcessTrail, Trail } from '../../src/trace/trail.js';
import { silent } from '../support/logger.js';
import { readEvents } from '../support/sse.js';

describe('activity stream after a restart', () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  async function serveTrail(trail: Trail): Promise<string> {
    const app = new Koa();
    app.silent = true;
    app.use(errorResponder(silent));
    app.use(new StreamHub({ logger: silent, now: () => 0 }).activityStream(inProcessTrail(trail)));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    close = () => { server.closeAllConnections(); server.close(); };
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  }

  it('tells a client resuming with an id of the earlier process\'s trail of the reset, then replays this one\'s entries from the first', async () => {
    const before = new Trail();
    for (const id of ['a', 'b', 'c']) before.publish({ at: 0, channel: 'generic', kind: 'verdict', id, verdict: 'accepted' });
    const last = (await readEvents(await serveTrail(before), 3, { headers: { 'last-event-id': '0' } }))[2]!;
    expect(last.id).toBe(`3@${before.life}`);
    close?.();
    // A fresh process: its trail numbers entries from 1 again, past the console's last id before long.
    const trail = new Trail();
    for (const id of ['x1', 'x2', 'x3', 'x4']) trail.publish({ at: 0, channel: 'generic', kind: 'verdict', id, verdict: 'accepted' });
    const frames = await readEvents(await serveTrail(trail), 5, { headers: { 'last-event-id': last.id } });
    expect(frames[0]).toMatchObject({ event: 'gap', data: { after: 3, next: 1, reset: true } });
    expect(frames.slice(1).map((frame) => frame.data.id)).toEqual(['x1', 'x2', 'x3', 'x4']);
  });

  it('answers 409 to a resume point ahead of the trail, as /v1/events does, instead of a stream that skips every entry up to it', async () => {
    // A fresh process: its trail numbers entries from 1 again; the console resumes with the old process's last id.
    const trail = new Trail();
    trail.publish({ at: 0, channel: 'generic', kind: 'verdict', id: 'm1', verdict: 'accepted' });
    const app = new Koa();
    app.silent = true;
    app.use(errorResponder(silent));
    app.use(new StreamHub({ logger: silent, now: () => 0 }).activityStream(inProcessTrail(trail)));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    close = () => { server.closeAllConnections(); server.close(); };
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/?after=5000`, { signal: AbortSignal.timeout(1000) });
    await response.body?.cancel();
    expect(response.status).toBe(409);
  });
});
