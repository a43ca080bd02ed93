import { connect } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { eventStream } from '../../src/http/event-stream.js';
import type { OutboxRecord } from '../../src/store/types.js';
import { startService, until, type Running } from '../helpers.js';

describe('event stream back-pressure', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  it('cuts off a client that stops reading instead of buffering without bound', async () => {
    service = await startService();
    const app = new Koa();
    app.silent = true; // the cut-off client's closed socket is expected here
    app.use(eventStream(service.intake.pipeline, { maxBufferedBytes: 64 * 1024 }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const port = (server.address() as { port: number }).port;
    // A raw client that sends the request and then never reads.
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause();
    const outlet = service.intake.pipeline.outlet;
    await until(() => outlet.streamCount === 1);
    const body = JSON.stringify({ type: 'chat.processedMessage', id: 'x', content: 'y'.repeat(10_000) });
    for (let seq = 1; seq <= 2000 && outlet.streamCount > 0; seq++) {
      const record: OutboxRecord = { id: `x${seq}`, seq, type: 'chat.processedMessage', sessionKey: 's', channel: 'generic', createdAt: 0, updatedAt: 0, attempts: 0, state: 'none', body };
      outlet.publish(record);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(outlet.streamCount).toBe(0);
    socket.destroy();
    server.close();
  });
});
