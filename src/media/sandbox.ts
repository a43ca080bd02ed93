import { hash } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, readdir, rm, rmdir, stat, statfs, unlink } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { counted, MediaError } from '../core/errors.js';

/** Temporary files carry this suffix until they are complete. */
export const TEMP_SUFFIX = '.part';

/**
 * The folder of a session inside the media folder: a readable prefix of safe characters and a
 * short hash of the whole key. No key (`../x`, `/etc`, NUL, backslashes, 10k characters, `.`)
 * can name a folder outside, and two keys that share a prefix never share a folder.
 */
export function sessionFolder(sessionKey: string): string {
  const prefix = sessionKey.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 48) || 'session';
  return `${prefix}-${hash('sha256', wtf8(sessionKey), 'hex').slice(0, 10)}`;
}

/**
 * The key's bytes in WTF-8: UTF-8 for well-formed text (so existing folders keep their names),
 * and lone surrogates encoded as themselves. Plain UTF-8 would turn every lone surrogate into
 * U+FFFD, and `"a\uD800"`, `"a\uDC00"` and `"a\uFFFD"` would share one folder.
 */
function wtf8(text: string): Buffer {
  if (!/\p{Surrogate}/u.test(text)) return Buffer.from(text, 'utf8');
  const bytes: number[] = [];
  for (const char of text) {
    // Iteration yields a surrogate pair as one code point and a lone surrogate on its own.
    const code = char.codePointAt(0) as number;
    if (code < 0xd800 || code > 0xdfff) bytes.push(...Buffer.from(char, 'utf8'));
    else bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
  }
  return Buffer.from(bytes);
}

/** Resolve a path inside `root`, refusing anything that would land outside it. */
export function inside(root: string, ...parts: string[]): string {
  const base = resolve(root);
  const target = resolve(base, ...parts);
  const rel = relative(base, target);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel) || rel.split(sep).includes('..')) {
    throw new Error(`path escapes the media folder: ${parts.join('/')}`);
  }
  return target;
}

/** Create the session folder (0700) and return its absolute path. */
export async function ensureFolder(root: string, folder: string): Promise<string> {
  const path = inside(root, folder);
  await mkdir(path, { recursive: true, mode: 0o700 });
  return path;
}

/**
 * A failure to write the media folder itself (ENOSPC, EROFS, EACCES, EDQUOT, EIO, ENOTDIR, …):
 * no server answer changes it, so it is not retried, and its reason says where to look.
 */
export function diskFailure(error: unknown, doing: string): MediaError {
  if (error instanceof MediaError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  return new MediaError(
    'disk',
    `cannot ${doing} in the media folder (media.dir)${code ? ` (${code})` : ''}: ${(error as Error).message}`,
    false,
    undefined,
    { cause: error },
  );
}

/**
 * What keeps `dir` from taking downloads, or undefined: not writable (read-only file system, no
 * permission, a file where a folder should be; a folder not made yet is judged by the nearest
 * one that exists), or less room left than one download of `maxBytes`. Nothing is created.
 */
export async function writeProblem(dir: string, maxBytes: number): Promise<string | undefined> {
  let existing = resolve(dir);
  for (;;) {
    // ENOTDIR: a file on the way up, which the walk then names.
    const info = await stat(existing).catch((error: NodeJS.ErrnoException) =>
      error.code === 'ENOENT' || error.code === 'ENOTDIR' ? undefined : error,
    );
    if (info instanceof Error) return info.message;
    if (info && !info.isDirectory()) return `"${existing}" is not a folder (ENOTDIR)`;
    if (info) break;
    if (dirname(existing) === existing) return 'no part of the path exists';
    existing = dirname(existing);
  }
  try {
    await access(existing, constants.W_OK);
  } catch (error) {
    return `"${existing}" is not writable (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  const room = await statfs(existing).then(
    (fs) => fs.bavail * fs.bsize,
    () => undefined,
  );
  if (room !== undefined && room < maxBytes)
    return `${counted(room, 'byte')} free on its file system, less than one download of media.maxBytes (${maxBytes})`;
  return undefined;
}

/** Remove temporaries a crashed run left behind. */
export async function sweepTemporaries(root: string): Promise<number> {
  let removed = 0;
  for (const folder of await entries(root)) {
    if (!folder.isDirectory()) continue;
    for (const file of await entries(join(root, folder.name))) {
      if (file.isFile() && file.name.endsWith(TEMP_SUFFIX)) {
        await unlink(join(root, folder.name, file.name)).catch(() => undefined);
        removed++;
      }
    }
  }
  return removed;
}

/**
 * Delete files not used for `ttlMs`. Last use is the file's mtime, which the service sets at
 * download and on every use (`touch`); atime is not trusted (relatime/noatime mounts).
 * Folders left empty go too.
 */
export async function sweepStale(
  root: string,
  ttlMs: number,
  now: number,
): Promise<{ files: number; folders: number }> {
  let files = 0;
  let folders = 0;
  for (const folder of await entries(root)) {
    if (!folder.isDirectory()) continue;
    const dir = join(root, folder.name);
    let left = 0;
    for (const file of await entries(dir)) {
      const path = join(dir, file.name);
      const info = await stat(path).catch(() => undefined);
      if (info && file.isFile() && now - info.mtimeMs >= ttlMs) {
        await rm(path, { force: true });
        files++;
      } else left++;
    }
    if (
      left === 0 &&
      (await rmdir(dir).then(
        () => true,
        () => false,
      ))
    )
      folders++;
  }
  return { files, folders };
}

async function entries(dir: string) {
  return readdir(dir, { withFileTypes: true }).catch(() => []);
}
