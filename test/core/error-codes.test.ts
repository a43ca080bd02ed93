import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, FAILURE_KINDS, type ErrorCode } from '../../src/core/errors.js';

/** Every member of ErrorCode: the listed codes and a failed download's `media_<kind>`. */
const MEMBERS: ErrorCode[] = [...ERROR_CODES, ...FAILURE_KINDS.map((kind) => `media_${kind}` as const)];

/** The codes in the first column of docs/http.md's "Error codes" table. */
function documentedCodes(): string[] {
  const text = readFileSync('docs/http.md', 'utf8');
  const section = text.split(/^## /m).find((part) => part.startsWith('Error codes\n'));
  if (!section) throw new Error('docs/http.md has no "## Error codes" section');
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));
  return rows.flatMap((row) =>
    [...(row.split('|')[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((match) => match[1] as string),
  );
}

/** Every .ts file under a folder. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('error codes', () => {
  it('are listed once each', () => {
    expect(new Set(MEMBERS).size).toBe(MEMBERS.length);
  });

  it('are each documented in docs/http.md, which lists no other', () => {
    const documented = documentedCodes();
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...MEMBERS].sort());
  });

  it('cover the error bodies written by hand, outside the error classes', () => {
    const written = sources('src').flatMap((path) =>
      [...readFileSync(path, 'utf8').matchAll(/code: '([a-z_]+)', (?:message|status)/g)].map(
        (match) => match[1] as string,
      ),
    );
    expect(written.length).toBeGreaterThan(0);
    for (const code of written) expect(MEMBERS).toContain(code);
  });
});
