import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureFolder, inside, sessionFolder, sweepStale, sweepTemporaries } from '../../src/media/sandbox.js';
import { tempDir } from '../support/helpers.js';

describe('media sandbox', () => {
  it('keeps every hostile session key inside the media folder', async () => {
    const root = tempDir().path;
    const keys = [
      '../../etc',
      '/etc/passwd',
      'a\u0000b',
      '..\\..\\windows',
      'x'.repeat(10_000),
      '.',
      '..',
      '',
      'wa:+1 650/555',
      '%2e%2e%2f',
      '\u202e',
    ];
    const folders = new Set<string>();
    for (const key of keys) {
      const folder = sessionFolder(key);
      expect(folder).toMatch(/^[A-Za-z0-9_-]{1,48}-[0-9a-f]{10}$/);
      const path = await ensureFolder(root, folder);
      expect(relative(root, path).startsWith('..')).toBe(false);
      folders.add(folder);
    }
    expect(folders.size).toBe(keys.length);
    expect(sessionFolder('wa:1')).not.toBe(sessionFolder('wa_1'));
  });

  it('gives keys that differ only in lone surrogates different folders', () => {
    const keys = [
      'wa:\uD800',
      'wa:\uDC00',
      'wa:\uFFFD',
      'wa:\uDBFF',
      'wa:\uD800\uD800',
      'wa:\uDC00\uD800',
      'wa:\uD83D\uDE00',
    ];
    expect(new Set(keys.map(sessionFolder)).size).toBe(keys.length);
  });

  it('keeps the folder name of a well-formed key (its UTF-8 hash)', () => {
    expect(sessionFolder('qq:group:123')).toBe(
      `qq_group_123-${createHash('sha256').update('qq:group:123').digest('hex').slice(0, 10)}`,
    );
    expect(sessionFolder('wa:😀')).toBe(
      `wa___-${createHash('sha256').update('wa:😀', 'utf8').digest('hex').slice(0, 10)}`,
    );
  });

  it('refuses a path that would leave the root', () => {
    expect(() => inside('/srv/media', '..', 'x')).toThrow(/escapes/);
    expect(() => inside('/srv/media', '/etc')).toThrow(/escapes/);
    expect(inside('/srv/media', 'a', 'b.png')).toBe(resolve('/srv/media/a/b.png'));
  });

  it('sweeps files unused for ttlMs by the clock it is given, then empty folders, and stale temporaries', async () => {
    const root = tempDir().path;
    mkdirSync(join(root, 's1'));
    mkdirSync(join(root, 's2'));
    writeFileSync(join(root, 's1', 'old.png'), 'x');
    writeFileSync(join(root, 's1', 'new.png'), 'x');
    writeFileSync(join(root, 's2', 'old.jpg'), 'x');
    writeFileSync(join(root, 's2', 'crashed.part'), 'x');
    const day = 86_400_000;
    const now = Date.UTC(2030, 0, 10);
    utimesSync(join(root, 's1', 'old.png'), new Date(now - 8 * day), new Date(now - 8 * day));
    utimesSync(join(root, 's2', 'old.jpg'), new Date(now - 8 * day), new Date(now - 8 * day));
    utimesSync(join(root, 's1', 'new.png'), new Date(now - 6 * day), new Date(now - 6 * day));
    expect(await sweepTemporaries(root)).toBe(1);
    expect(await sweepStale(root, 7 * day, now)).toEqual({ files: 2, folders: 1 });
    expect(readdirSync(join(root, 's1'))).toEqual(['new.png']);
    expect(existsSync(join(root, 's2'))).toBe(false);
    // A day later the remaining file is past its TTL too.
    expect(await sweepStale(root, 7 * day, now + 1.5 * day)).toEqual({ files: 1, folders: 1 });
  });
});
