import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { Links } from '../../src/connections/links.js';
import type { RawDelivery } from '../../src/events/transport.js';
import { until } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/*
 * The bot sockets of one instance, with real sockets on 127.0.0.1: a bot connects, its frames go
 * to `deliver` one at a time, and a stop closes the sockets and waits for what they delivered.
 */

const target = { channel: 'qq', adapter: 'onebot', transport: 'ws-reverse' };
/** A frame of `bytes` bytes naming its number. */
const frame = (n: number, bytes = 64) => JSON.stringify({ n, pad: 'x'.repeat(bytes) });

interface Bench {
  links: Links;
  /** The frames delivered, by number, in order. */
  delivered: number[];
  connect(): Promise<WebSocket>;
}

describe('the bot sockets of an instance', () => {
  let server: Server | undefined;
  const peers: WebSocket[] = [];
  afterEach(async () => {
    for (const peer of peers.splice(0)) peer.terminate();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  /** Links behind a WebSocket server; `deliver` runs before each frame counts as delivered. */
  async function bench(deliver: (delivery: RawDelivery) => Promise<unknown> = async () => undefined): Promise<Bench> {
    const delivered: number[] = [];
    const links = new Links({
      instance: 'test',
      now: new ManualClock().now,
      logger: silent,
      classify: () => undefined,
      counted: () => undefined,
      deliver: async (_channel, delivery) => {
        await deliver(delivery);
        delivered.push((JSON.parse(delivery.body.toString()) as { n: number }).n);
      },
    });
    const wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
    server = createServer();
    server.on('upgrade', (request, socket, head) =>
      wss.handleUpgrade(request, socket, head, (ws) =>
        links.attach(`qq\n1\n${peers.length}`, ws, target, { botId: '1', role: 'Universal' }),
      ),
    );
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return {
      links,
      delivered,
      async connect() {
        const peer = new WebSocket(`ws://127.0.0.1:${port}/`);
        peer.on('error', () => undefined);
        peers.push(peer);
        await new Promise((resolve) => peer.once('open', resolve));
        await until(() => links.size === peers.length);
        return peer;
      },
    };
  }

  describe('regression: a stop waited only for the sockets still open, not for the frames of one that had closed', () => {
    it('resolves drained() once the frames a socket delivered before it closed are recorded', async () => {
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const { links, delivered, connect } = await bench(() => held);
      const peer = await connect();
      // The frames and the bot's close in one read, as a stop often finds them.
      for (let n = 1; n <= 5; n++) peer.send(frame(n));
      const gone = new Promise((resolve) => peer.once('close', resolve));
      peer.close();
      await gone;
      await until(() => links.size === 0);
      let drained = false;
      const waiting = links.drained().then(() => {
        drained = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(drained).toBe(false);
      release();
      await waiting;
      expect(delivered).toEqual([1, 2, 3, 4, 5]);
    });
  });

  describe('regression: a stop read a closing socket for 2 s at most, and dropped what a flooding bot had sent before it read the close', () => {
    it('reads a closing socket past closeWaitMs while its frames keep coming, until the bot answers the close', async () => {
      // Each frame takes a few ms to record: 300 take several closeWaitMs, and most wait in the TCP buffers meanwhile.
      const { links, delivered, connect } = await bench(() => new Promise((resolve) => setTimeout(resolve, 5)));
      const peer = await connect();
      for (let n = 1; n <= 300; n++) peer.send(frame(n, 4096));
      await until(() => delivered.length > 0);
      const bye = new Promise<number>((resolve) => peer.once('close', (code) => resolve(code)));
      await links.close(() => true, 200, 'server stopping', 60_000);
      await links.drained();
      expect(delivered).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
      expect(await bye).toBe(1001);
    });

    it('drops a closing socket that brings no frame for closeWaitMs (a bot that does not answer the close)', async () => {
      const { links, delivered, connect } = await bench();
      const peer = await connect();
      peer.send(frame(1));
      await until(() => delivered.length === 1);
      // The bot stops reading: it never sees our close, so never answers it.
      peer.pause();
      await links.close(() => true, 200, 'server stopping', 60_000);
      expect(links.size).toBe(0);
      expect(delivered).toEqual([1]);
    });
  });
});
