import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mediaConnections } from '../../src/media/connections.js';
import { MediaError } from '../../src/core/errors.js';
import { fetchToFile } from '../../src/media/fetch.js';
import { guardLookup, refuseAddress } from '../../src/media/guard.js';
import { Slots } from '../../src/media/slots.js';
import { tempDir } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { countingConnections, endless, PNG, serve, type TestServer } from '../support/servers.js';

const MAX = 64 * 1024;

describe('fetchToFile against local servers', () => {
  let media: TestServer;
  let trap: TestServer;
  let dir: string;
  const base = () => `http://127.0.0.1:${media.port}`;
  const options = () => ({
    maxBytes: MAX,
    timeoutMs: 10_000,
    retries: 3,
    minBackoffMs: 20,
    allowHosts: [`127.0.0.1:${media.port}`],
    allowPorts: [trap.port],
  });
  const target = (name: string) => join(dir, name);
  const failure = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MediaError);
    return error as MediaError;
  };

  beforeAll(async () => {
    dir = tempDir().path;
    // Listens on every loopback address (v4 and v6) on one port; must never be reached.
    trap = await serve((_req, res) => res.end('trapped'), '::');
    media = await serve((req, res, n) => {
      const path = (req.url ?? '').split('?')[0];
      switch (path) {
        case '/ok.png':
          res.setHeader('content-type', 'image/png');
          res.end(PNG);
          break;
        case '/big-declared':
          res.setHeader('content-length', String(MAX + 1));
          res.write(Buffer.alloc(1024));
          break;
        case '/big-chunked': {
          // No Content-Length: chunked, and far over the cap.
          const chunk = Buffer.alloc(16 * 1024, 1);
          let sent = 0;
          const pump = () => {
            while (sent < MAX * 4) {
              sent += chunk.length;
              if (!res.write(chunk)) return res.once('drain', pump);
            }
            res.end();
          };
          pump();
          break;
        }
        case '/close-delimited': {
          // No length and no chunking: the body runs until the server closes the connection.
          const socket = res.socket!;
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: image/png\r\nconnection: close\r\n\r\n');
          socket.end(Buffer.alloc(MAX * 3, 2));
          break;
        }
        case '/flaky':
          if (n < 2) {
            res.statusCode = 503;
            res.end('busy');
          } else {
            res.setHeader('content-type', 'image/png');
            res.end(PNG);
          }
          break;
        case '/rate':
          if (n < 2) {
            res.statusCode = 429;
            res.setHeader('retry-after', '1');
            res.end();
          } else res.end(PNG);
          break;
        // Two seconds after ManualClock's default start, as an HTTP date.
        case '/rate-date':
          if (n < 2) {
            res.statusCode = 503;
            res.setHeader('retry-after', 'Tue, 01 Jan 2030 00:00:02 GMT');
            res.end();
          } else res.end(PNG);
          break;
        case '/rate-long':
          res.statusCode = 429;
          res.setHeader('retry-after', '3600');
          res.end();
          break;
        case '/missing':
          res.statusCode = 404;
          res.end('nope');
          break;
        case '/stall':
          res.setHeader('content-type', 'image/png');
          res.flushHeaders();
          res.write(PNG.subarray(0, 8));
          break;
        case '/r1':
          res.statusCode = 302;
          res.setHeader('location', '/r2');
          res.end();
          break;
        case '/r2':
          res.statusCode = 301;
          res.setHeader('location', `${base()}/r3`);
          res.end();
          break;
        case '/r3':
          res.statusCode = 307;
          res.setHeader('location', '/ok.png');
          res.end();
          break;
        case '/loop':
          res.statusCode = 302;
          res.setHeader('location', '/loop');
          res.end();
          break;
        case '/to-trap':
          res.statusCode = 302;
          res.setHeader('location', `http://127.0.0.2:${trap.port}/x`);
          res.end();
          break;
        case '/auth':
          res.end(req.headers.authorization ?? 'none');
          break;
        case '/auth-redirect':
          res.statusCode = 302;
          res.setHeader('location', `http://localhost:${media.port}/auth`);
          res.end();
          break;
        default:
          res.statusCode = 404;
          res.end();
      }
    });
  });
  afterAll(async () => {
    await media.close();
    await trap.close();
  });

  it('stores the bytes with their size and sha256, through a temporary name', async () => {
    const result = await fetchToFile(`${base()}/ok.png`, target('ok'), options());
    expect(readFileSync(target('ok'))).toEqual(PNG);
    expect(result).toMatchObject({
      bytes: PNG.length,
      sha256: createHash('sha256').update(PNG).digest('hex'),
      declaredType: 'image/png',
    });
    expect(existsSync(target('ok.part'))).toBe(false);
  });

  it('refuses a declared oversize body and cuts an undeclared or lying one at maxBytes, leaving no file', async () => {
    for (const path of ['/big-declared', '/big-chunked', '/close-delimited']) {
      const error = await failure(fetchToFile(`${base()}${path}`, target(path.slice(1)), options()));
      expect([path, error.kind]).toEqual([path, 'too_large']);
      expect(existsSync(target(path.slice(1)))).toBe(false);
      expect(existsSync(target(path.slice(1) + '.part'))).toBe(false);
    }
    expect(media.hits.get('/big-chunked')).toBe(1);
  });

  it('retries a 503 and never retries a 404', async () => {
    await fetchToFile(`${base()}/flaky`, target('flaky'), options());
    expect(media.hits.get('/flaky')).toBe(2);
    expect((await failure(fetchToFile(`${base()}/missing`, target('missing'), options()))).message).toBe('HTTP 404');
    expect(media.hits.get('/missing')).toBe(1);
  });

  it('waits out Retry-After seconds on the clock it is given before trying again', async () => {
    const clock = new ManualClock();
    const done = fetchToFile(`${base()}/rate`, target('rate'), { ...options(), clock });
    await clock.armed(1000);
    expect(media.hits.get('/rate')).toBe(1);
    clock.tick(999);
    expect(media.hits.get('/rate')).toBe(1);
    clock.tick(1);
    await done;
    expect(media.hits.get('/rate')).toBe(2);
    expect(readFileSync(target('rate'))).toEqual(PNG);
  });

  it('reads a Retry-After date against the injected clock, not the machine time', async () => {
    const clock = new ManualClock(Date.UTC(2030, 0, 1));
    const done = fetchToFile(`${base()}/rate-date`, target('rate-date'), { ...options(), clock, timeoutMs: 10_000 });
    await clock.armed(2000);
    clock.tick(2000);
    await done;
    expect(media.hits.get('/rate-date')).toBe(2);
  });

  it("gives up at once, with the server's answer, when Retry-After is past the budget", async () => {
    const clock = new ManualClock();
    const error = await failure(
      fetchToFile(`${base()}/rate-long`, target('rate-long'), { ...options(), clock, timeoutMs: 10_000 }),
    );
    expect([error.kind, error.message]).toEqual(['http', 'HTTP 429']);
    expect(media.hits.get('/rate-long')).toBe(1);
  });

  it('gives up on a stalled server when the clock reaches the timeout', async () => {
    const clock = new ManualClock();
    const pending = failure(fetchToFile(`${base()}/stall`, target('stall'), { ...options(), clock, timeoutMs: 400 }));
    await media.arrived('/stall');
    clock.tick(400);
    const error = await pending;
    expect(error.kind).toBe('timeout');
    expect(existsSync(target('stall'))).toBe(false);
    expect(existsSync(target('stall.part'))).toBe(false);
  });

  it('closes an error or redirect body instead of draining it, and holds the slot until it is closed', async () => {
    const sent = { bytes: 0 };
    const bodies = await serve((req, res) => {
      if (req.url?.startsWith('/endless-500')) endless(res, 500, sent);
      else if (req.url?.startsWith('/endless-302')) endless(res, 302, sent, { location: '/png' });
      else res.end(PNG);
    });
    const slots = new Slots(2);
    const sockets = countingConnections();
    const url = (path: string) => `http://127.0.0.1:${bodies.port}${path}`;
    const limited = {
      ...options(),
      allowHosts: [`127.0.0.1:${bodies.port}`],
      retries: 0,
      connections: sockets.connections,
      acquire: (signal: AbortSignal) => slots.acquire('k', 2, signal),
    };
    const results = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) =>
        failure(fetchToFile(url(`/endless-500?i=${i}`), target(`e500-${i}`), limited)),
      ),
      ...Array.from({ length: 4 }, (_, i) => fetchToFile(url(`/endless-302?i=${i}`), target(`e302-${i}`), limited)),
    ]);
    expect(results.slice(0, 8).map((e) => (e as MediaError).message)).toEqual(Array(8).fill('HTTP 500'));
    expect(readFileSync(target('e302-0'))).toEqual(PNG);
    // Every connection closed when its download gave back the slot: never more open than slots.
    expect(sockets.peak()).toBe(2);
    expect(sockets.open()).toBe(0);
    await bodies.drained();
    await bodies.close();
    // The server saw them close too (it notices a reset a moment late, so allow one closing per slot);
    // drained bodies would have kept all 16 open.
    expect(bodies.connections().peak).toBeLessThanOrEqual(4);
    // Each body was cut after what the kernel's socket buffers took in (a few MB on loopback).
    expect(sent.bytes).toBeLessThan(12 * 16 * 1024 * 1024);
  });

  it('does not retry a full disk: one GET, a disk error naming ENOSPC, no file left', async () => {
    const before = media.hits.get('/ok.png') ?? 0;
    const full = () =>
      new Writable({
        write(_chunk, _encoding, done) {
          done(
            Object.assign(new Error('ENOSPC: no space left on device, write'), {
              code: 'ENOSPC',
              errno: -28,
              syscall: 'write',
            }),
          );
        },
      });
    const error = await failure(fetchToFile(`${base()}/ok.png`, target('full'), { ...options(), openFile: full }));
    expect([error.kind, error.retryable]).toEqual(['disk', false]);
    expect(error.message).toBe(
      'cannot write a download in the media folder (media.dir) (ENOSPC): ENOSPC: no space left on device, write',
    );
    expect(media.hits.get('/ok.png')).toBe(before + 1);
    expect(existsSync(target('full'))).toBe(false);
  });

  it('does not retry a media folder it cannot create files in (a path under a file): one GET, a disk error', async () => {
    const before = media.hits.get('/ok.png') ?? 0;
    writeFileSync(target('plain-file'), 'x');
    const error = await failure(fetchToFile(`${base()}/ok.png`, join(target('plain-file'), 'x'), options()));
    expect([error.kind, error.retryable]).toEqual(['disk', false]);
    expect(error.message).toMatch(/^cannot write a download in the media folder \(media\.dir\) \(ENOTDIR\)/);
    expect(media.hits.get('/ok.png')).toBe(before + 1);
  });

  it('follows up to three redirects, re-checking each hop', async () => {
    await fetchToFile(`${base()}/r1`, target('r'), options());
    expect(readFileSync(target('r'))).toEqual(PNG);
    expect((await failure(fetchToFile(`${base()}/loop`, target('loop'), options()))).message).toMatch(
      /more than 3 redirects/,
    );
    expect((await failure(fetchToFile(`${base()}/to-trap`, target('to-trap'), options()))).kind).toBe('blocked');
    expect(trap.total()).toBe(0);
  });

  it('drops platform credentials when a redirect leaves the origin', async () => {
    await fetchToFile(`${base()}/auth`, target('auth1'), {
      ...options(),
      headers: { authorization: 'Bearer platform' },
    });
    expect(readFileSync(target('auth1'), 'utf8')).toBe('Bearer platform');
    await fetchToFile(`${base()}/auth-redirect`, target('auth2'), {
      ...options(),
      allowHosts: [`127.0.0.1:${media.port}`, `localhost:${media.port}`],
      headers: { authorization: 'Bearer platform' },
    });
    expect(readFileSync(target('auth2'), 'utf8')).toBe('none');
  });

  it('refuses every blocked address form without connecting', async () => {
    const p = trap.port;
    const urls = [
      `http://127.0.0.2:${p}/`,
      `http://[::1]:${p}/`,
      `http://[::ffff:127.0.0.2]:${p}/`,
      `http://2130706434:${p}/`,
      `http://0x7f000002:${p}/`,
      `http://127.1:${p}/`,
      `http://localhost:${p}/`,
      `http://0177.0.0.1:${p}/`,
      `http://[::7f00:2]:${p}/`,
      `http://0.0.0.0:${p}/`,
      `file:///etc/passwd`,
      `ftp://127.0.0.1:${p}/x`,
      `http://127.0.0.1:22/`,
      `http://user:pw@127.0.0.1:${p}/`,
    ];
    for (const url of urls) {
      const error = await failure(fetchToFile(url, target('blocked'), options()));
      expect([url, error.kind]).toEqual([url, 'blocked']);
    }
    expect(trap.total()).toBe(0);
    expect(readdirSync(dir).filter((f) => f.startsWith('blocked'))).toEqual([]);
  });

  it('checks the address a name resolves to at connect time (DNS rebinding)', async () => {
    let lookups = 0;
    const rebinding = guardLookup((_host, _opts, callback) => {
      lookups++;
      callback(null, [{ address: '127.0.0.1', family: 4 }]);
    });
    const error = await failure(
      fetchToFile(`http://media.example.test:${trap.port}/x`, target('rebind'), {
        ...options(),
        connections: mediaConnections({ lookup: rebinding }),
      }),
    );
    expect(error.kind).toBe('blocked');
    expect(error.message).toMatch(/resolves to 127\.0\.0\.1 is a loopback address/);
    expect(lookups).toBe(1);
    expect(trap.total()).toBe(0);
  });
});

describe('refuseAddress', () => {
  it('allows public unicast only', () => {
    expect(refuseAddress('8.8.8.8')).toBeUndefined();
    expect(refuseAddress('2606:4700::1111')).toBeUndefined();
    expect(refuseAddress('::ffff:8.8.8.8')).toBeUndefined();
    for (const address of [
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      'fc00::1',
      'fe80::1',
      '224.0.0.1',
      '::',
      '::1',
      '64:ff9b::7f00:1',
      '2002:7f00:1::',
      '2001:db8::1',
      '192.0.2.1',
      '255.255.255.255',
      '::ffff:10.0.0.1',
      '::a00:1',
    ]) {
      expect([address, refuseAddress(address)]).not.toEqual([address, undefined]);
    }
  });
});
