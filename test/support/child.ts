import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { until } from './helpers.js';

/** The built service: what `npm start` and the package's bin run. Built by test/global-setup.ts. */
export const MAIN = join(process.cwd(), 'dist/main.js');

/** A process a test started, with what it has written so far and how it ends. */
export interface Child {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** stdout and stderr as they came, interleaved. */
  output(): string;
  /** Its exit code (null when a signal ended it). */
  exited: Promise<number | null>;
}

/** Run `command` in `cwd` with PATH and `env` as its whole environment, keeping what it writes. */
export function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string | undefined> = {},
): Child {
  const child = spawn(command, args, {
    cwd,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
    output += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
    output += d;
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, stdout: () => stdout, stderr: () => stderr, output: () => output, exited };
}

/** Run the built service in `cwd` with `env` (settings from INTAKE_* and PORT), without waiting for it. */
export function runMain(cwd: string, env: Record<string, string | undefined> = {}): Child {
  return run(process.execPath, [MAIN], cwd, env);
}

/** Run the built service as a child process on `port`, once it is ready (/readyz). */
export function startChild(dir: string, port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  return ready(port, runMain(dir, { PORT: String(port), LOG_LEVEL: 'warn', INTAKE_DRAIN_MS: '0', ...env }));
}

/** The built library's `createIntake` behind a HTTP server, in a child process: a test can kill it with SIGKILL. */
const INTAKE_CHILD = `
import { createServer } from 'node:http';
const { createIntake } = await import(process.env.INTAKE_ENTRY);
const intake = await createIntake(JSON.parse(process.env.INTAKE_OPTIONS));
const server = createServer(intake.app.callback());
server.on('upgrade', (request, socket, head) => { if (!intake.upgrade(request, socket, head)) socket.destroy(); });
server.listen(Number(process.env.PORT), '127.0.0.1');
`;

/**
 * Run the built library's `createIntake(options)` (JSON: `configFile`, and what the service
 * process has no setting for, such as `flushLeaseMs`) as a child process serving its app on
 * `port`, once it is ready (/readyz).
 */
export function startIntakeChild(dir: string, port: number, options: Record<string, unknown>): Promise<ChildProcess> {
  return ready(
    port,
    run(process.execPath, ['--input-type=module', '-e', INTAKE_CHILD], dir, {
      PORT: String(port),
      INTAKE_ENTRY: pathToFileURL(join(process.cwd(), 'dist/index.js')).href,
      INTAKE_OPTIONS: JSON.stringify({ cwd: dir, env: {}, ...options }),
    }),
  );
}

/** The process once its service on `port` answers /readyz; it exiting first fails with its output. */
async function ready(port: number, started: Child): Promise<ChildProcess> {
  const { child } = started;
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`service exited early: ${started.output()}`);
    return fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
  }, 10_000);
  return child;
}
