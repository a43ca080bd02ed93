import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './support/helpers.js';

const ROOT = process.cwd();
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };

/**
 * A scratch project as a user has it after `npm install <tarball>`: the package unpacked in its
 * node_modules, beside the packages a production install brings. The repository's dev
 * dependencies are left out (only `@types/node`, which every TypeScript Node project adds, is
 * kept), so a declaration that needs one of them fails the type-check as it would for a user.
 */
function consumerProject(tarball: string): string {
  const dir = tempDir().path;
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  execFileSync('tar', ['xzf', tarball, '-C', modules]);
  execFileSync('mv', [join(modules, 'package'), join(modules, 'agent-intake')]);
  const dev = new Set(Object.keys(pkg.devDependencies).filter((name) => name !== '@types/node'));
  const link = (name: string) => {
    if (!dev.has(name) && name !== 'agent-intake') symlinkSync(join(ROOT, 'node_modules', name), join(modules, name));
  };
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name.startsWith('.')) continue;
    if (!name.startsWith('@')) {
      link(name);
      continue;
    }
    mkdirSync(join(modules, name), { recursive: true });
    for (const scoped of readdirSync(join(ROOT, 'node_modules', name))) link(`${name}/${scoped}`);
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        strict: true,
        noEmit: true,
        types: ['node'],
      },
      files: ['app.ts'],
    }),
  );
  return dir;
}

const CONSUMER_TS = `import Koa from 'koa';
import { createIntake, loadConfig, RedisStore, ShardedRedisStore, SqliteStore, type RawDelivery, type PlatformReply, type ProcessedMessage, type RedisStoreOptions, type ShardedStoreOptions } from 'agent-intake';
import { describeStoreContract } from 'agent-intake/testing';
const intake = await createIntake({ config: loadConfig({ env: { INTAKE_STORE: 'memory' } }) });
intake.on('chat.processedMessage', (message: ProcessedMessage) => console.log(message.content));
const reply: PlatformReply = { status: 200, body: {} };
const delivery: RawDelivery | undefined = undefined;
const options: RedisStoreOptions = { keyPrefix: 'ai' };
const sharded: ShardedStoreOptions = { keyPrefix: 'ai', shards: 3 };
const app = new Koa();
app.use(intake.middleware());
void [reply, delivery, options, sharded, RedisStore, ShardedRedisStore, SqliteStore, describeStoreContract];
await intake.close();
`;

const CONSUMER_JS = `import Koa from 'koa';
import { createIntake, loadConfig } from 'agent-intake';
const intake = await createIntake({ config: loadConfig({ env: { INTAKE_STORE: 'memory', INTAKE_MEDIA_DIR: './media', LOG_LEVEL: 'error' } }) });
const app = new Koa();
app.use(intake.middleware());
const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = 'http://127.0.0.1:' + server.address().port;
const posted = await fetch(base + '/webhooks/generic', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sessionKey: 'c:1', content: 'hi' }) });
const page = await fetch(base + '/');
console.log(JSON.stringify({ webhook: posted.status, console: page.status }));
server.close();
await intake.close();
`;

/** The scripts npm runs by itself when the package is installed, or started in its folder. */
const LIFECYCLE = [
  'preinstall',
  'install',
  'postinstall',
  'prepare',
  'preprepare',
  'postprepare',
  'prestart',
  'poststart',
];

describe('the npm package', () => {
  let tarball = '';
  let files: string[] = [];
  const manifest = { text: '', mtimeMs: 0 };
  beforeAll(() => {
    const build = spawnSync(process.execPath, ['scripts/ensure-build.mjs'], { stdio: 'inherit' });
    expect(build.status).toBe(0);
    manifest.text = readFileSync(join(ROOT, 'package.json'), 'utf8');
    manifest.mtimeMs = statSync(join(ROOT, 'package.json')).mtimeMs;
    const out = tempDir().path;
    // With its scripts, as a user packs it (prepack/postpack shape the packed package.json).
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--silent', '--pack-destination', out], { encoding: 'utf8' }),
    ) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarball = join(out, packed[0]?.filename as string);
    files = packed[0]?.files.map((file) => file.path) ?? [];
  }, 120_000);

  it("ships a package.json that runs nothing on install and names no file it leaves out, and leaves the repository's as it was", () => {
    const shipped = JSON.parse(
      execFileSync('tar', ['xzf', tarball, '-O', 'package/package.json'], { encoding: 'utf8' }),
    ) as { scripts?: Record<string, string>; bin: Record<string, string> };
    expect(Object.keys(shipped.scripts ?? {}).filter((name) => LIFECYCLE.includes(name))).toEqual([]);
    for (const [name, command] of Object.entries(shipped.scripts ?? {})) {
      for (const [path] of command.matchAll(/[\w./-]+\.(?:m?js|cjs|ts)\b/g))
        expect(files, `script "${name}" runs ${path}`).toContain(path);
    }
    expect(files).toContain(shipped.bin['agent-intake']);
    // The repository keeps its build scripts, unchanged to the byte and the millisecond (a newer
    // package.json would make the next start rebuild).
    expect(readFileSync(join(ROOT, 'package.json'), 'utf8')).toBe(manifest.text);
    expect(statSync(join(ROOT, 'package.json')).mtimeMs).toBe(manifest.mtimeMs);
  });

  it('holds the build, the console, the docs, README, LICENSE and CHANGELOG, and nothing of development', () => {
    for (const needed of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/main.js',
      'dist/testing/index.js',
      'dist/store/redis/lua/admit.lua',
      'console/index.html',
      'docs/stores.md',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
      'package.json',
    ]) {
      expect(files).toContain(needed);
    }
    const unwanted = files.filter(
      (path) =>
        /^(src|test|bench|scripts|\.ci|data|media)\//.test(path) ||
        /intake\.config\.json$|\.build-stamp$|^\.env/.test(path),
    );
    expect(unwanted).toEqual([]);
  });

  it('puts back the package.json of a pack that died before postpack when packed again', () => {
    const dir = tempDir().path;
    mkdirSync(join(dir, 'scripts'));
    copyFileSync(join(ROOT, 'scripts/pack-manifest.mjs'), join(dir, 'scripts/pack-manifest.mjs'));
    const original = `${JSON.stringify({ name: 'p', scripts: { prepare: 'node scripts/build.mjs', start: 'node main.js' } }, null, 2)}\n`;
    writeFileSync(join(dir, 'package.json'), original);
    const step = (name: string) =>
      execFileSync(process.execPath, ['scripts/pack-manifest.mjs', name], { cwd: dir, encoding: 'utf8' });
    step('strip');
    step('strip');
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toEqual({
      name: 'p',
      scripts: { start: 'node main.js' },
    });
    step('restore');
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(original);
    expect(existsSync(join(dir, '.package.json.packing'))).toBe(false);
  });

  it('type-checks a consumer under moduleResolution nodenext with only @types/node added, and runs it', () => {
    const dir = consumerProject(tarball);
    writeFileSync(join(dir, 'app.ts'), CONSUMER_TS);
    const check = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
      encoding: 'utf8',
    });
    expect(check.stdout + check.stderr).toBe('');
    expect(check.status).toBe(0);
    writeFileSync(join(dir, 'app.mjs'), CONSUMER_JS);
    const run = spawnSync(process.execPath, ['app.mjs'], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout.trim().split('\n').pop() as string)).toEqual({ webhook: 200, console: 200 });
  }, 60_000);
});
