import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Running } from '../support/helpers.js';
import { PNG } from '../support/servers.js';

/** GET with the path exactly as written: fetch() would normalize `..` away before sending. */
function rawGet(
  url: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the console route', () => {
  let service: Running;
  const TOKEN = 'console-unit-token';
  const auth = { authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    service = await startService({
      server: { apiToken: TOKEN },
      channels: [
        { id: 'generic', adapter: 'generic' },
        { id: 'own', adapter: 'generic', media: { dir: 'channel-media' } },
      ],
    });
    const session = join(service.dir, 'media', 'cli_a-0123456789');
    mkdirSync(session, { recursive: true });
    writeFileSync(join(session, 'pic.png'), PNG);
    writeFileSync(join(session, 'page.html'), '<script>alert(1)</script>');
    writeFileSync(join(service.dir, 'secret.txt'), 'outside the media folder');
    symlinkSync(join(service.dir, 'secret.txt'), join(session, 'escape.txt'));
    const elsewhere = mkdtempSync(join(tmpdir(), 'intake-elsewhere-'));
    writeFileSync(join(elsewhere, 'other.png'), PNG);
    symlinkSync(elsewhere, join(service.dir, 'media', 'linked-folder'));
    mkdirSync(join(service.dir, 'channel-media', 's'), { recursive: true });
    writeFileSync(join(service.dir, 'channel-media', 's', 'voice.ogg'), 'OggS');
  });
  afterAll(() => service?.stop());

  it('serves the page with a strict Content-Security-Policy and no inline script or style', async () => {
    const page = await rawGet(service.url, '/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    const html = page.body.toString();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|<style/);
    // Every module of the page, as served: none builds HTML from a string.
    const scripts = readdirSync(new URL('../../console/', import.meta.url)).filter((name) => name.endsWith('.js'));
    expect(scripts).toEqual(expect.arrayContaining(['app.js', 'dom.js', 'connections.js']));
    for (const name of scripts) {
      const script = await rawGet(service.url, `/console/${name}`);
      expect(script.status).toBe(200);
      expect(script.headers['content-type']).toMatch(/javascript/);
      expect(script.body.toString()).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    }
    expect((await rawGet(service.url, '/console/..%2fpackage.json')).status).toBe(404);
    expect((await rawGet(service.url, '/console/nope.js')).status).toBe(404);
  });

  it('serves a stored image inline with its type, and other files as attachments', async () => {
    const image = await rawGet(service.url, '/v1/media/media/cli_a-0123456789/pic.png', auth);
    expect(image.status).toBe(200);
    expect(image.headers['content-type']).toBe('image/png');
    expect(image.headers['content-disposition']).toBeUndefined();
    expect(image.headers['x-content-type-options']).toBe('nosniff');
    expect(image.body.equals(PNG)).toBe(true);
    const html = await rawGet(service.url, '/v1/media/media/cli_a-0123456789/page.html', auth);
    expect(html.status).toBe(200);
    expect(html.headers['content-disposition']).toMatch(/^attachment; filename="page.html"/);
    expect(html.headers['content-security-policy']).toMatch(/sandbox/);
    // A channel's own media folder counts too.
    const voice = await rawGet(service.url, '/v1/media/channel-media/s/voice.ogg', auth);
    expect(voice.status).toBe(200);
    expect(voice.headers['content-type']).toBe('audio/ogg');
  });

  it('needs the API token like every /v1 route', async () => {
    expect((await rawGet(service.url, '/v1/media/media/cli_a-0123456789/pic.png')).status).toBe(401);
  });

  it.each([
    ['a ".." segment', '/v1/media/media/../secret.txt', 400],
    ['an encoded ".." segment', '/v1/media/media/%2e%2e/secret.txt', 400],
    ['an encoded slash', '/v1/media/media%2f..%2fsecret.txt', 400],
    ['an absolute path', '/v1/media//etc/passwd', 400],
    ['an encoded absolute path', '/v1/media/%2Fetc%2Fpasswd', 400],
    ['a NUL byte', '/v1/media/media/cli_a-0123456789/pic.png%00.txt', 400],
    ['bad percent-encoding', '/v1/media/media/%E0%A4%A', 400],
    ['a file outside the media folders', '/v1/media/secret.txt', 404],
    ['a symlinked file escaping the folder', '/v1/media/media/cli_a-0123456789/escape.txt', 404],
    ['a symlinked folder escaping the folder', '/v1/media/media/linked-folder/other.png', 404],
    ['a folder', '/v1/media/media/cli_a-0123456789', 404],
    ['a missing file', '/v1/media/media/cli_a-0123456789/gone.png', 404],
  ])('refuses %s', async (_what, path, status) => {
    const answer = await rawGet(service.url, path, auth);
    expect(answer.status).toBe(status);
    expect(answer.body.toString()).not.toContain('outside the media folder');
    expect(answer.body.equals(PNG)).toBe(false);
    // The file is still there: the refusal is the route's, not a missing file's.
    expect(readFileSync(join(service.dir, 'secret.txt'), 'utf8')).toBe('outside the media folder');
  });
});
