import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxRecord } from '../../src/events.js';
import { errorResponder } from '../../src/http/errors.js';
import { StreamHub, type OutboxReader } from '../../src/http/event-stream.js';
import { readEvents, silent } from '../helpers.js';

const record = (seq: number, state: OutboxRecord['state']): OutboxRecord => ({
  id: `x${seq}`, seq, type: 'chat.processedMessage', sessionKey: 's', channel: 'generic', createdAt: 0, updatedAt: 0, attempts: 0, state,
  body: JSON.stringify({ type: 'chat.processedMessage', id: `x${seq}` }),
});

/** An outbox after a trim: seq 2 was still pending (kept), 3 and 4 were trimmed, 5 is retained. */
const trimmed: OutboxReader = {
  outboxAfter: async (seq, limit) => [record(2, 'pending'), record(5, 'none')].filter((r) => r.seq > seq).slice(0, limit),
  lastSeq: async () => 5,
  tail: () => () => undefined,
};

describe('event stream resume across a trim', () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  it('announces a gap before a record when records between it and the previous replayed one were trimmed', async () => {
    const app = new Koa();
    app.silent = true; // the client hangs up after three frames
    app.use(errorResponder(silent));
    app.use(new StreamHub({ logger: silent, now: () => 0 }).events(trimmed));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    close = () => { server.closeAllConnections(); server.close(); };
    const frames = await readEvents(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, 3, { headers: { 'last-event-id': '1' } });
    // Today: 2 then 5, and nothing tells the client that 3 and 4 are gone.
    expect(frames.map((f) => f.event === 'gap' ? 'gap' : f.id)).toEqual(['2', 'gap', '5']);
  });
});
