import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { errorResponder } from '../../src/http/errors.js';
import { StreamHub } from '../../src/http/event-stream.js';
import { inProcessTrail, Trail } from '../../src/trace/trail.js';
import { silent } from '../helpers.js';

describe('activity stream after a restart', () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

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
