#!/usr/bin/env node
// Build dist/ from src/ only when it is missing or older than a source file, so `npm start`
// starts at once from the build made at install time (`prepare`) and still never runs stale code.
// `--force` builds anyway (`npm run build`). The build's start time is kept in dist/.build-stamp.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, rmSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');
const inputs = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];

/** Newest modification time (ms) of a file, or of any file under a folder. */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), stat.mtimeMs);
}

const force = process.argv.includes('--force');
const built = !force && existsSync(stamp) && existsSync(join(root, 'dist', 'main.js')) ? statSync(stamp).mtimeMs : -1;
const changed = inputs.filter((input) => existsSync(join(root, input)) && newest(join(root, input)) > built);
if (changed.length === 0) process.exit(0);

let tsc;
try {
  tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  // Installed without dev dependencies: keep a build that exists, fail clearly without one.
  if (built >= 0) {
    console.error(
      'agent-intake: sources are newer than dist/, but TypeScript is not installed; starting the existing build',
    );
    process.exit(0);
  }
  console.error(
    'agent-intake: dist/ is missing and TypeScript is not installed; run `npm ci` (with dev dependencies) first',
  );
  process.exit(1);
}

// The stamp carries the time the build started: a source saved during the build is newer than it.
const started = new Date();
if (built >= 0 && !force) console.error(`agent-intake: ${changed.join(', ')} changed since the last build; rebuilding`);
// A clean folder: a module removed from src/ must not live on in dist/.
rmSync(join(root, 'dist'), { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (result.status !== 0) process.exit(result.status ?? 1);
// tsc emits only code: the Redis store's Lua scripts are read from beside it at run time.
cpSync(join(root, 'src'), join(root, 'dist'), {
  recursive: true,
  filter: (path) => statSync(path).isDirectory() || path.endsWith('.lua'),
});
writeFileSync(stamp, `${started.toISOString()}\n`);
utimesSync(stamp, started, started);
