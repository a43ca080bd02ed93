import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { storedType } from '../../src/media/type.js';
import { tempDir } from '../support/helpers.js';
import { partOf, stageFor } from './parts.js';
import { PNG, serve, type TestServer } from '../support/servers.js';

const HTML = Buffer.from('<!doctype html><html><body><script>fetch("/steal")</script></body></html>');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
const XML_SVG = Buffer.from(
  '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
);
const opaque = { type: 'document', mime: 'application/octet-stream', extension: 'bin' };

describe('storedType', () => {
  it('trusts a sniffed image signature whatever was declared', async () => {
    expect(await storedType(PNG, 'text/html')).toEqual({ type: 'image', mime: 'image/png', extension: 'png' });
  });

  it('never makes unsniffable bytes an image, even when declared as one', async () => {
    expect(await storedType(HTML, 'image/png')).toEqual(opaque);
    expect(await storedType(Buffer.alloc(0), 'image/jpeg')).toEqual(opaque);
    expect(await storedType(Buffer.from('not an image at all'), 'image/gif')).toEqual(opaque);
  });

  it('stores active types as opaque bytes', async () => {
    for (const declared of [
      'text/html',
      'image/svg+xml',
      'application/xhtml+xml',
      'application/javascript',
      'text/javascript',
      'application/xml',
      'text/xml',
    ]) {
      expect([declared, await storedType(declared === 'image/svg+xml' ? SVG : HTML, declared)]).toEqual([
        declared,
        opaque,
      ]);
    }
    // An SVG with an XML declaration sniffs as application/xml: still not stored as XML.
    expect(await storedType(XML_SVG, 'image/svg+xml')).toEqual(opaque);
  });

  it('keeps passive text with its own extension', async () => {
    expect(await storedType(Buffer.from('plain words'), 'text/plain; charset=utf-8')).toEqual({
      type: 'document',
      mime: 'text/plain',
      extension: 'txt',
    });
    expect(await storedType(Buffer.from('a,b\n1,2'), 'text/csv')).toEqual({
      type: 'document',
      mime: 'text/csv',
      extension: 'csv',
    });
  });

  it('stores an unknown or missing type as opaque bytes', async () => {
    expect(await storedType(Buffer.from('x'), undefined)).toEqual(opaque);
    expect(await storedType(Buffer.from('x'), 'application/x-whatever')).toEqual(opaque);
  });
});

describe('media types of downloaded files', () => {
  let host: TestServer;
  beforeAll(async () => {
    host = await serve((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path === '/page.png') {
        res.setHeader('content-type', 'image/png');
        res.end(HTML);
      } else if (path === '/logo.svg') {
        res.setHeader('content-type', 'image/svg+xml');
        res.end(SVG);
      } else if (path === '/empty.png') {
        res.setHeader('content-type', 'image/png');
        res.end();
      } else {
        res.setHeader('content-type', 'text/html');
        res.end(PNG);
      }
    });
  });
  afterAll(() => host.close());

  it('stores HTML declared as PNG, SVG with script and an empty "image" as .bin documents, and a real PNG as an image', async () => {
    const stage = stageFor(tempDir().path, systemClock, { allowHosts: [`127.0.0.1:${host.port}`], retries: 0 });
    const url = (path: string) => `http://127.0.0.1:${host.port}${path}`;
    const [result] = await stage.collect([
      partOf('types', [
        { url: url('/page.png'), mimeType: 'image/png', type: 'image' },
        { url: url('/logo.svg'), type: 'image' },
        { url: url('/empty.png'), mimeType: 'image/png', type: 'image' },
        { url: url('/real') },
      ]),
    ]);
    expect(result?.errors).toEqual([]);
    expect(result?.media.map((m) => [m.type, m.mime, m.path.split('.').pop(), m.bytes])).toEqual([
      ['document', 'application/octet-stream', 'bin', HTML.length],
      ['document', 'application/octet-stream', 'bin', SVG.length],
      ['document', 'application/octet-stream', 'bin', 0],
      ['image', 'image/png', 'png', PNG.length],
    ]);
    await stage.close();
  });
});
