import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxRecord } from '../../src/core/ports/index.js';
import { StreamHub, type OutboxReader } from '../../src/http/event-stream.js';
import { silent } from '../support/logger.js';

describe('event stream replay to a client that does not read', () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  it('holds no more than about maxBufferedBytes for a resuming client that stops reading', async () => {
    // 5,000 retained records of 20 KB: ~100 MB if the whole replay is queued for one socket.
    const body = JSON.stringify({ type: 'chat.processedMessage', id: 'x', content: 'y'.repeat(20_000) });
    const records: OutboxRecord[] = Array.from({ length: 5000 }, (_, i) => ({
      id: `x${i + 1}`, seq: i + 1, type: 'chat.processedMessage', sessionKey: 's', channel: 'generic', createdAt: 0, updatedAt: 0, attempts: 0, state: 'none', body,
    }));
    const reader: OutboxReader = {
      outboxAfter: async (seq, limit) => records.filter((r) => r.seq > seq).slice(0, limit),
      lastSeq: async () => records.length,
      tail: () => () => undefined,
    };
    const app = new Koa();
    app.silent = true;
    app.use(new StreamHub({ logger: silent, now: () => 0, maxBufferedBytes: 1024 * 1024 }).events(reader));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const before = process.memoryUsage().rss;
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    close = () => { socket.destroy(); server.closeAllConnections(); server.close(); };
    socket.pause(); // never reads
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 0\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const grownMb = (process.memoryUsage().rss - before) / 1e6;
    expect(grownMb).toBeLessThan(50);
  });
});
