import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { INTERNAL_REFERENCE } from './support/internal-references.js';

const src = resolve(import.meta.dirname, '..', 'src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Every text file under a folder (sources, documents, fixtures), images left out. */
function textsUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? textsUnder(path) : /\.(png|jpe?g|gif|ico|webp)$/.test(name) ? [] : [path];
  });
}

/** The entry points: the only files at the root of src/. */
const entries = new Set(['index', 'main', 'client']);
/** The composition: builds the service from the stages; only the entry points import it. */
const composition = 'service';
/** Folders that are stages: each does one job and meets the others only through shared shapes. */
const stages = new Set([
  'access',
  'activation',
  'adapters',
  'claims',
  'connections',
  'correlate',
  'dedup',
  'debounce',
  'emit',
  'handlers',
  'http',
  'ingest',
  'media',
  'push',
  'retention',
  'revise',
  'store',
  'takeover',
  'testing',
  'trace',
  'turns',
]);
/** The shared kernel and shapes any stage may import: ports, errors, clock (core/), event shapes, config, metrics. */
const shared = new Set(['core', 'events', 'config', 'metrics']);

/** The first path segment under src/ of a file (`store` for src/store/redis/redis.ts, `events` for src/events.ts). */
function placeOf(file: string): string {
  return relative(src, file)
    .split(sep)[0]!
    .replace(/\.(ts|js)$/, '');
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'(\.[^']+)'/g)) found.push(match[1]!);
  return found.map((spec) => resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
}

describe('the layout of src/', () => {
  const files = filesUnder(src);

  it('holds only the entry points at its root, and every other file in a tier', () => {
    const loose = files
      .filter((file) => dirname(file) === src && !entries.has(placeOf(file)))
      .map((file) => relative(src, file));
    const unplaced = files
      .map(placeOf)
      .filter((place) => !entries.has(place) && place !== composition && !stages.has(place) && !shared.has(place));
    expect({ loose, unplaced: [...new Set(unplaced)] }).toEqual({ loose: [], unplaced: [] });
  });

  it('has the composition imported by the entry points alone', () => {
    const wrong = files
      .filter((file) => !entries.has(placeOf(file)) && placeOf(file) !== composition)
      .flatMap((file) =>
        importsOf(file)
          .filter((target) => placeOf(target) === composition)
          .map((target) => `${relative(src, file)} -> ${relative(src, target)}`),
      );
    expect(wrong).toEqual([]);
  });

  it('has the shared kernel importing nothing above it', () => {
    const wrong = files
      .filter((file) => shared.has(placeOf(file)))
      .flatMap((file) =>
        importsOf(file)
          .filter((target) => !shared.has(placeOf(target)))
          .map((target) => `${relative(src, file)} -> ${relative(src, target)}`),
      );
    expect(wrong).toEqual([]);
  });

  it('has one folder per platform under adapters/, beside the kit and the registry', () => {
    const loose = files
      .filter((file) => dirname(file) === join(src, 'adapters') && !file.endsWith('index.ts'))
      .map((file) => relative(src, file));
    expect(loose).toEqual([]);
  });

  // Lines as the formatter lays them out (`npm test` checks the formatting first): a file this
  // long is split along a seam in its data, never squeezed.
  it('has no file over 400 formatted lines', () => {
    const long = files
      .map((file) => [relative(src, file), readFileSync(file, 'utf8').split('\n').length] as const)
      .filter(([, lines]) => lines > 400);
    expect(long).toEqual([]);
  });

  it('has no stage importing another stage or anything above the shared shapes', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = placeOf(file);
      if (!stages.has(from) && !shared.has(from)) continue; // the composition imports what it composes
      for (const target of importsOf(file)) {
        const to = placeOf(target);
        if (to === from || shared.has(to)) continue;
        wrong.push(`${relative(src, file)} -> ${relative(src, target)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('has nothing outside src/testing importing the test kit', () => {
    const wrong = files
      .filter((file) => placeOf(file) !== 'testing')
      .flatMap((file) =>
        importsOf(file)
          .filter((target) => placeOf(target) === 'testing')
          .map((target) => `${relative(src, file)} -> ${relative(src, target)}`),
      );
    expect(wrong).toEqual([]);
  });

  it('names no document a user does not have, nor how the work was organised, in src/, docs/ or test/ (comments ship in the .d.ts files)', () => {
    const root = resolve(src, '..');
    const pattern = resolve(root, 'test', 'support', 'internal-references.ts');
    const texts = ['src', 'docs', 'test']
      .flatMap((dir) => textsUnder(resolve(root, dir)))
      .filter((file) => file !== pattern);
    const leaks = texts.flatMap((file) => {
      const found = INTERNAL_REFERENCE.exec(readFileSync(file, 'utf8'));
      return found ? [`${relative(root, file)}: ${found[0]}`] : [];
    });
    expect(texts.length).toBeGreaterThan(files.length);
    expect(leaks).toEqual([]);
  });
});
