import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxRecord } from '../../src/core/ports/index.js';
import { StreamHub, type OutboxReader } from '../../src/http/event-stream.js';
import { silent } from '../support/logger.js';
import { readEvents, serveStream } from '../support/sse.js';

/* One client's stream (src/http/stream-client.ts): its replay after Last-Event-ID, the gaps it announces, and what it queues. */

const record = (seq: number, state: OutboxRecord['state']): OutboxRecord => ({
  id: `x${seq}`,
  seq,
  type: 'chat.processedMessage',
  sessionKey: 's',
  channel: 'generic',
  createdAt: 0,
  updatedAt: 0,
  attempts: 0,
  state,
  body: JSON.stringify({ type: 'chat.processedMessage', id: `x${seq}` }),
});

/** An outbox after a trim: seq 2 was still pending (kept), 3 and 4 were trimmed, 5 is retained. */
const trimmed: OutboxReader = {
  outboxAfter: async (seq, limit) =>
    [record(2, 'pending'), record(5, 'none')].filter((r) => r.seq > seq).slice(0, limit),
  lastSeq: async () => 5,
  tail: () => () => undefined,
};

describe('regression: a replay across a trim', () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  /** Serve `outbox`'s event stream; resolves its URL. */
  async function serve(outbox: OutboxReader): Promise<string> {
    const served = await serveStream(new StreamHub({ logger: silent, now: () => 0 }).events(outbox));
    close = served.close;
    return served.url;
  }

  it('announces a gap before a record when records between it and the previous replayed one were trimmed', async () => {
    const frames = await readEvents(await serve(trimmed), 3, { headers: { 'last-event-id': '1' } });
    // 2, then a gap that tells the client 3 and 4 are gone, then 5.
    expect(frames.map((f) => (f.event === 'gap' ? 'gap' : f.id))).toEqual(['2', 'gap', '5']);
  });

  it('announces a gap when every record after the resume point was trimmed', async () => {
    const gone: OutboxReader = { outboxAfter: async () => [], lastSeq: async () => 4, tail: () => () => undefined };
    const frames = await readEvents(await serve(gone), 1, { headers: { 'last-event-id': '1' } });
    expect(frames.map((f) => [f.event, f.data])).toEqual([['gap', { after: 1, next: 5 }]]);
  });

  it('sends a record committed just after a replay read nothing, not a gap in its place', async () => {
    // A suite run under load saw this race as `gap {after: 0, next: 2}` and no record 1: the replay read nothing, the
    // record was committed, and the newest seq read after it was taken for a trim.
    const records: OutboxRecord[] = [];
    const listeners = new Set<(r: OutboxRecord) => void>();
    const racing: OutboxReader = {
      outboxAfter: async (seq, limit) => {
        const found = records.filter((r) => r.seq > seq).slice(0, limit);
        if (records.length === 0) {
          records.push(record(1, 'none'));
          for (const listener of listeners) listener(records[0]!);
        }
        return found;
      },
      lastSeq: async () => records.at(-1)?.seq ?? 0,
      tail: (listener) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    // The first frame decides (the race sent its gap first, and record 1 never): read it however slow the machine.
    const frames = await readEvents(await serve(racing), 1, { headers: { 'last-event-id': '0' } });
    expect(frames.map((f) => (f.event === 'gap' ? 'gap' : f.id))).toEqual(['1']);
  });
});

describe('regression: a replay to a client that does not read', () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  it('holds no more than about maxBufferedBytes for a resuming client that stops reading', async () => {
    // 5,000 retained records of 20 KB: ~100 MB if the whole replay is queued for one socket.
    const body = JSON.stringify({ type: 'chat.processedMessage', id: 'x', content: 'y'.repeat(20_000) });
    const records: OutboxRecord[] = Array.from({ length: 5000 }, (_, i) => ({
      id: `x${i + 1}`,
      seq: i + 1,
      type: 'chat.processedMessage',
      sessionKey: 's',
      channel: 'generic',
      createdAt: 0,
      updatedAt: 0,
      attempts: 0,
      state: 'none',
      body,
    }));
    const reader: OutboxReader = {
      outboxAfter: async (seq, limit) => records.filter((r) => r.seq > seq).slice(0, limit),
      lastSeq: async () => records.length,
      tail: () => () => undefined,
    };
    const served = await serveStream(
      new StreamHub({ logger: silent, now: () => 0, maxBufferedBytes: 1024 * 1024 }).events(reader),
    );
    const before = process.memoryUsage().rss;
    const socket = connect(served.port, '127.0.0.1');
    close = () => {
      socket.destroy();
      served.close();
    };
    socket.pause(); // never reads
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 0\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const grownMb = (process.memoryUsage().rss - before) / 1e6;
    expect(grownMb).toBeLessThan(50);
  });
});
