import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { Links } from '../../src/connections/links.js';
import { SocketDialer } from '../../src/connections/socket-dialer.js';
import { until } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

const dialer = (random: () => number, reconnectMinMs = 1000, reconnectMaxMs = 30_000) => {
  const clock = new ManualClock();
  const links = new Links({
    instance: 'test',
    now: clock.now,
    logger: silent,
    classify: () => undefined,
    deliver: async () => undefined,
    counted: () => undefined,
  });
  return new SocketDialer(
    {
      key: 'k',
      target: { channel: 'c', adapter: 'onebot', transport: 'ws' },
      dial: { url: 'ws://127.0.0.1:9', headers: {}, reconnectMinMs, reconnectMaxMs, leaseMs: 15_000 },
      maxPayload: 1024,
      actionTimeoutMs: 100,
      clock,
      logger: silent,
      random,
    },
    links,
  );
};

describe("the forward socket dialer's reconnect backoff", () => {
  it('doubles from reconnectMinMs up to reconnectMaxMs, each wait between half and all of its ceiling', () => {
    const top = dialer(() => 0.999_999);
    expect([0, 1, 2, 3, 4, 5, 6, 40].map((failures) => top.backoffMs(failures))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
    const bottom = dialer(() => 0);
    expect([0, 1, 5, 40].map((failures) => bottom.backoffMs(failures))).toEqual([500, 1000, 15_000, 15_000]);
  });

  it('spreads the waits of bots that failed together', () => {
    let seed = 7;
    const random = () => (seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647;
    const waits = new Set(Array.from({ length: 50 }, () => dialer(random, 100, 100).backoffMs(3)));
    expect(waits.size).toBeGreaterThan(20);
    for (const wait of waits) expect(wait).toBeGreaterThanOrEqual(50);
  });
});

describe('regression: the reconnect backoff starts over only after a healthy connection', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A bot on 127.0.0.1 whose `n`th socket (from 0) is handled by `script(socket, n)`. */
  const bot = async (script: (socket: WebSocket, n: number) => void) => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    let opened = 0;
    wss.on('connection', (socket) => script(socket, opened++));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of wss.clients) socket.terminate();
          wss.close(() => resolve());
        }),
    );
    return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, opened: () => opened };
  };
  /** A dialer on a manual clock with waits at their ceiling (no jitter). */
  const dialing = (url: string) => {
    const clock = new ManualClock();
    const links = new Links({
      instance: 'test',
      now: clock.now,
      logger: silent,
      classify: () => ({ kind: 'meta', heartbeat: true }),
      deliver: async () => undefined,
      counted: () => undefined,
    });
    const dialer = new SocketDialer(
      {
        key: 'k',
        target: { channel: 'c', adapter: 'onebot', transport: 'ws' },
        dial: { url, headers: {}, reconnectMinMs: 1000, reconnectMaxMs: 30_000, leaseMs: 15_000 },
        maxPayload: 1024,
        actionTimeoutMs: 100,
        clock,
        logger: silent,
        random: () => 0.999_999,
      },
      links,
    );
    cleanups.push(() => dialer.stop(10));
    /** The reconnect wait armed next (the dialer's only timer). */
    const nextWait = async () => {
      await until(() => clock.pending().length === 1);
      return clock.pending()[0];
    };
    return { clock, dialer, links, nextWait };
  };
  const heartbeat = JSON.stringify({ post_type: 'meta_event', meta_event_type: 'heartbeat', self_id: 1, time: 1 });

  it('keeps doubling the wait when each socket opens and dies at once, even after a frame', async () => {
    const { url } = await bot((socket) => {
      socket.send(heartbeat);
      socket.close(1011, 'gone');
    });
    const { clock, dialer, nextWait } = dialing(url);
    dialer.start();
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const wait = await nextWait();
      waits.push(wait as number);
      await clock.advance(wait as number);
    }
    expect(waits).toEqual([2000, 4000, 8000, 16_000]);
  });

  it.each([
    {
      what: 'starts over from reconnectMinMs once a socket stayed open 30 s and received frames',
      frames: true,
      next: 1000,
    },
    { what: 'does not start over for a socket that stayed open 30 s without a frame', frames: false, next: 16_000 },
  ])('$what', async ({ frames, next }) => {
    let close: (() => void) | undefined;
    const { url } = await bot((socket, n) => {
      if (n < 3) return socket.close(1011, 'gone');
      if (frames) socket.send(heartbeat);
      close = () => socket.close(1011, 'open 30 s, then gone');
    });
    const { clock, dialer, links, nextWait } = dialing(url);
    dialer.start();
    for (const expected of [2000, 4000, 8000]) {
      expect(await nextWait()).toBe(expected);
      await clock.advance(expected);
    }
    await until(() => close !== undefined && links.size === 1);
    await clock.advance(30_000);
    close?.();
    expect(await nextWait()).toBe(next);
  });
});
