import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { envSettings } from '../src/config/load.js';
import { loadConfig } from '../src/service/configure.js';
import { tempDir, until } from './support/helpers.js';
import { freePort } from './support/net.js';
import { run } from './support/child.js';

const ROOT = process.cwd();
const KNOWN_ENV = new Set([...envSettings.map(([name]) => name), 'INTAKE_CONFIG', 'NODE_ENV']);

/** The final stage of the Dockerfile: its ENV, ENTRYPOINT, CMD and HEALTHCHECK command (JSON forms). */
function finalStage(text: string) {
  const lines = text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const stage = lines.slice(lines.map((line) => line.startsWith('FROM ')).lastIndexOf(true));
  const env: Record<string, string> = {};
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  let healthcheck: string[] = [];
  for (const line of stage) {
    if (line.startsWith('ENV '))
      for (const [, key, value] of line.slice(4).matchAll(/(\w+)=(\S+)/g)) env[key as string] = value as string;
    if (line.startsWith('ENTRYPOINT ')) entrypoint = JSON.parse(line.slice(11)) as string[];
    if (line.startsWith('CMD ')) cmd = JSON.parse(line.slice(4)) as string[];
    if (line.startsWith('HEALTHCHECK ')) healthcheck = JSON.parse(line.slice(line.indexOf(' CMD ') + 5)) as string[];
  }
  return {
    from: stage[0],
    user: stage.find((line) => line.startsWith('USER ')),
    env,
    entrypoint,
    cmd,
    healthcheck,
    stage,
  };
}

describe('deployment files', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });

  const image = finalStage(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));

  it('the image: slim Node 20, non-root, an init as PID 1, volumes, a health check, only real settings', () => {
    expect(image.from).toMatch(/^FROM node:20-[a-z]+-slim$/);
    expect(image.user).toBe('USER node');
    expect(image.entrypoint).toEqual(['/usr/bin/tini', '--']);
    expect(image.cmd).toEqual(['node', 'dist/main.js']);
    expect(image.stage).toContain('VOLUME ["/data", "/media"]');
    expect(image.healthcheck[0]).toBe('node');
    expect(Object.keys(image.env).filter((name) => !KNOWN_ENV.has(name))).toEqual([]);
  });

  it("runs the image's command with its environment: healthy by its own check, stopped by SIGTERM after the drain", async () => {
    const port = await freePort();
    const data = tempDir().path;
    const media = tempDir().path;
    // The image's environment, with its folders and port moved to this machine's temporary ones.
    const env = {
      ...image.env,
      PORT: String(port),
      INTAKE_STORE: `sqlite:${join(data, 'intake.db')}`,
      INTAKE_MEDIA_DIR: media,
      INTAKE_API_TOKEN: 'deploy-test-token',
      INTAKE_DRAIN_MS: '200',
      LOG_LEVEL: 'info',
    };
    const [command, ...args] = image.cmd as [string, ...string[]];
    const { child, output, exited } = run(command === 'node' ? process.execPath : command, args, ROOT, env);
    children.push(child);
    const healthy = () =>
      spawnSync(process.execPath, image.healthcheck.slice(1), { env: { PATH: process.env.PATH, PORT: String(port) } })
        .status === 0;
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`exited: ${output()}`);
      return healthy();
    }, 15_000);
    // Logs are written asynchronously: the start line may follow the first answer.
    await until(() => output().includes(`"host":"0.0.0.0","port":${port}`), 10_000);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output()).toContain('"msg":"draining: /readyz answers 503');
    expect(output()).toContain('"msg":"stopped cleanly"');
    expect(healthy()).toBe(false);
  });

  it('the compose file: two instances on one Redis that keeps everything, naming only real settings', () => {
    const compose = parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as {
      services: Record<
        string,
        {
          image?: string;
          command?: string[];
          environment?: Record<string, string>;
          build?: string;
          stop_grace_period?: string;
        }
      >;
    };
    const intakes = Object.entries(compose.services).filter(([, service]) => service.build === '.');
    expect(intakes.map(([name]) => name)).toEqual(['intake-a', 'intake-b']);
    for (const [, service] of intakes) {
      expect(service.environment?.INTAKE_STORE).toBe('redis://redis:6379');
      expect(Object.keys(service.environment ?? {}).filter((name) => !KNOWN_ENV.has(name))).toEqual([]);
      expect(Number.parseInt(service.stop_grace_period ?? '0', 10)).toBeGreaterThan(5 + 15);
    }
    expect(compose.services.redis?.command).toEqual(
      expect.arrayContaining(['--maxmemory-policy', 'noeviction', '--appendonly', 'yes']),
    );
  });

  it('the compose file starts from a fresh clone: the config it mounts by default is in the repository and loads', () => {
    const compose = parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as {
      services: Record<string, { build?: string; volumes?: string[]; environment?: Record<string, string> }>;
    };
    for (const service of Object.values(compose.services).filter((candidate) => candidate.build === '.')) {
      const mount = service.volumes?.find((volume) => volume.endsWith(`:${service.environment?.INTAKE_CONFIG}:ro`));
      // Docker makes a missing bind source an empty directory: the default must be a real file.
      const source = /^\$\{INTAKE_CONFIG_FILE:-([^}]+)\}:/.exec(mount ?? '')?.[1];
      expect(source, mount).toBeDefined();
      expect(existsSync(join(ROOT, source as string))).toBe(true);
      const config = loadConfig({
        env: {},
        cwd: tempDir().path,
        file: JSON.parse(readFileSync(join(ROOT, source as string), 'utf8')),
      });
      expect(config.channels.length).toBeGreaterThan(0);
    }
  });

  it('the systemd unit runs node itself (not npm) with a stop timeout above the drain and the flush', () => {
    const unit = readFileSync(join(ROOT, 'deploy/agent-intake.service'), 'utf8');
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/node \/opt\/agent-intake\/dist\/main\.js$/m);
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
    expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])).toBeGreaterThan(5 + 15);
    for (const [, name] of unit.matchAll(/^Environment=(\w+)=/gm)) expect(KNOWN_ENV.has(name as string)).toBe(true);
    expect(existsSync(join(ROOT, '.dockerignore'))).toBe(true);
  });
});
