import { constants, readdirSync } from 'node:fs';
import { open, readFile, realpath } from 'node:fs/promises';
import { extname, isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Koa from 'koa';
import type Router from '@koa/router';
import mime from 'mime';
import { RequestError } from '../core/errors.js';

export interface ConsoleOptions {
  /** Every configured media folder (global and per channel); relative ones are taken from `cwd`. */
  mediaDirs: () => string[];
  /** Working directory: output `media[].path` values are relative to it. */
  cwd: string;
  /** Folder holding index.html, app.js, app.css. @default the package's `console/` */
  assetsDir?: string;
}

/** No inline script or style, nothing from elsewhere; media arrive as blob: URLs. */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Resolved beside this module, so it is the same folder from `src/` (vitest) and `dist/` (npm start). */
const PACKAGE_ASSETS = fileURLToPath(new URL('../../console/', import.meta.url));
const ASSET_NAME = /^[A-Za-z0-9_-]+\.(?:js|css|svg|png)$/;
/** Served inline; everything else is a download, so a stored HTML or SVG never runs on our origin. */
const INLINE = /^(?:image\/(?:png|jpeg|gif|webp|avif|bmp)|audio\/|video\/)/;

const securityHeaders = (ctx: Koa.Context) =>
  ctx.set({
    'Content-Security-Policy': CONSOLE_CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-cache',
  });

/**
 * The operator console: `GET /` (static, no token: it holds no data) and its assets under
 * `/console/`, plus `GET /v1/media/<path>`, which serves an output's `media[].path` from inside
 * the media folders only (same token rule as every `/v1/*` route).
 */
export function consoleRoutes(options: ConsoleOptions): (router: Router, requireToken: Koa.Middleware) => void {
  const assetsDir = options.assetsDir ?? PACKAGE_ASSETS;
  // The asset list is fixed at start: a request names one of these or gets 404.
  const assets = new Set(readdirSync(assetsDir).filter((name) => ASSET_NAME.test(name) && name !== 'index.html'));

  return function mountConsole(router, requireToken) {
    router.get('/', async (ctx) => {
      // Mounted under a prefix (koa-mount '/intake'), `/intake` must become `/intake/`: the page's
      // links are relative to it.
      if (ctx.originalUrl.split('?')[0] !== '/' && !ctx.originalUrl.split('?')[0]?.endsWith('/')) {
        ctx.redirect(`${ctx.originalUrl.split('?')[0]}/`);
        return;
      }
      securityHeaders(ctx);
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = await readFile(resolve(assetsDir, 'index.html'));
    });

    router.get('/console/:name', async (ctx) => {
      const name = ctx.params.name as string;
      if (!assets.has(name)) throw new RequestError('not_found', 404, `No console asset "${name}"`);
      securityHeaders(ctx);
      ctx.type = mime.getType(name) ?? 'application/octet-stream';
      ctx.body = await readFile(resolve(assetsDir, name));
    });

    router.get('/v1/media/{*path}', requireToken, async (ctx) => {
      const file = await mediaFile(ctx.path.slice('/v1/media/'.length), options);
      const type = mime.getType(extname(file.path)) ?? 'application/octet-stream';
      ctx.set({
        'X-Content-Type-Options': 'nosniff',
        // Opened directly, a file is still inert: no scripts, no plugins, its own origin.
        'Content-Security-Policy': "default-src 'none'; sandbox",
        'Cache-Control': 'private, max-age=300',
      });
      if (!INLINE.test(type)) ctx.attachment(file.path.split(sep).pop());
      ctx.type = type;
      ctx.length = file.size;
      ctx.body = file.handle.createReadStream();
    });
  };
}

/** An open media file inside one of the media folders. */
interface MediaFile {
  path: string;
  size: number;
  handle: Awaited<ReturnType<typeof open>>;
}

/**
 * Resolve a request path (still percent-encoded) to a regular file inside a media folder.
 * Malformed paths (`..`, `.`, empty or absolute, encoded slashes, NUL) are 400; anything that
 * does not exist or lands outside every media folder after symlinks are followed is 404, so
 * the answer never tells whether a file outside exists.
 */
export async function mediaFile(
  rawPath: string,
  options: Pick<ConsoleOptions, 'mediaDirs' | 'cwd'>,
): Promise<MediaFile> {
  const segments = rawPath.split('/').map((segment) => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw badPath('it is not valid percent-encoding');
    }
    if (decoded === '' || decoded === '.' || decoded === '..')
      throw badPath('it must be relative, without empty, "." or ".." segments');
    if (/[/\\\0]/.test(decoded)) throw badPath('a segment holds a slash, backslash or NUL');
    return decoded;
  });
  const notFound = new RequestError('not_found', 404, `No media file "${segments.join('/')}" in the media folders`);
  const wanted = resolve(options.cwd, ...segments);
  const real = await realpath(wanted).catch(() => undefined);
  if (real === undefined) throw notFound;
  const roots = await Promise.all(
    options.mediaDirs().map((dir) => realpath(resolve(options.cwd, dir)).catch(() => undefined)),
  );
  if (!roots.some((root) => root !== undefined && within(root, real))) throw notFound;
  // O_NOFOLLOW: a symlink swapped in after the check is refused, not followed.
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (!handle) throw notFound;
  const info = await handle.stat();
  if (!info.isFile()) {
    await handle.close();
    throw notFound;
  }
  return { path: real, size: info.size, handle };
}

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

function badPath(why: string): RequestError {
  return new RequestError(
    'bad_media_path',
    400,
    `A media path is an output's media[].path, relative to the working directory: ${why}`,
  );
}
