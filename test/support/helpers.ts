import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { loadConfig } from '../../src/service/configure.js';
import type { Clock } from '../../src/core/clock.js';
import type { Metrics } from '../../src/metrics/index.js';
import type { Store } from '../../src/core/ports/index.js';

export { freePort } from './net.js';

export const silent = pino({ level: 'silent' });

export function tempDir(prefix = 'intake-'): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export interface Running {
  url: string;
  intake: Intake;
  server: Server;
  dir: string;
  /** Stop the HTTP server and close the intake (flushes buffers). */
  stop(): Promise<void>;
}

/** Start the real service on a random loopback port, with a temporary sqlite file by default. */
export async function startService(file: Record<string, unknown> = {}, options: { dir?: string; metrics?: Metrics; clock?: Clock; logger?: pino.Logger; store?: Store; socketPingMs?: number } = {}): Promise<Running> {
  const dir = options.dir ?? tempDir().path;
  const config = loadConfig({
    env: {},
    cwd: dir,
    file: { store: `sqlite:${join(dir, 'intake.db')}`, media: { dir: join(dir, 'media') }, logLevel: 'silent', ...file, server: { port: 0, ...(file.server as object | undefined) } },
  });
  const intake = await createIntake({ config, logger: options.logger ?? silent, cwd: dir, ...(options.metrics ? { metrics: options.metrics } : {}), ...(options.clock ? { clock: options.clock } : {}),
    ...(options.store ? { store: options.store } : {}), ...(options.socketPingMs ? { socketPingMs: options.socketPingMs } : {}) });
  const server = createServer(intake.app.callback());
  server.on('upgrade', (request, socket, head) => {
    if (!intake.upgrade(request, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    intake,
    server,
    dir,
    async stop() {
      server.closeAllConnections();
      // Upgraded sockets (bots on a WebSocket) keep the server open until the intake closes them.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      await intake.close();
      await closed;
    },
  };
}

/** Hand `body` to the generic channel of an in-process intake, as a webhook received at `now` (no HTTP). */
export function deliverJson(intake: Intake, body: unknown, now: number) {
  return intake.ingest('generic', {
    headers: { 'content-type': 'application/json' }, query: new URLSearchParams(), now,
    body: Buffer.from(JSON.stringify(body)),
  });
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

export interface SseFrame {
  id: string;
  event: string;
  data: any;
}

/** Read an SSE stream until `count` frames arrived (or the timeout), then close it. */
export async function readEvents(url: string, count: number, options: { headers?: Record<string, string>; timeoutMs?: number; onOpen?: () => unknown } = {}): Promise<SseFrame[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 5000);
  const frames: SseFrame[] = [];
  try {
    const response = await fetch(url, { headers: options.headers ?? {}, signal: controller.signal });
    if (response.status !== 200) throw new Error(`event stream answered ${response.status}: ${await response.text()}`);
    await options.onOpen?.();
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = new Map<string, string>();
        for (const line of block.split('\n')) {
          const colon = line.indexOf(':');
          if (colon <= 0) continue;
          fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
        }
        if (fields.has('data')) frames.push({ id: fields.get('id') ?? '', event: fields.get('event') ?? 'message', data: JSON.parse(fields.get('data') as string) });
        if (frames.length >= count) return frames;
      }
    }
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return frames;
}

/**
 * Wait until `check` returns a truthy value, polling (for outcomes of background work). On a
 * timeout, `explain` (if given) says what the test saw, so a failure on CI can be read.
 */
export async function until<T>(check: () => T | Promise<T>, timeoutMs = 5000, explain?: () => unknown): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() - started > timeoutMs) {
      const seen = explain ? `: ${JSON.stringify(await explain())}` : '';
      throw new Error(`condition not met in ${timeoutMs} ms${seen}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Run the built service (`npm start` runs the same file) as a child process, once it is ready (/readyz). */
export function startChild(dir: string, port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  return ready(port, spawn(process.execPath, [join(process.cwd(), 'dist/main.js')], {
    cwd: dir,
    env: { PATH: process.env.PATH, PORT: String(port), LOG_LEVEL: 'warn', INTAKE_DRAIN_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
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
  return ready(port, spawn(process.execPath, ['--input-type=module', '-e', INTAKE_CHILD], {
    cwd: dir,
    env: { PATH: process.env.PATH, PORT: String(port), INTAKE_ENTRY: pathToFileURL(join(process.cwd(), 'dist/index.js')).href, INTAKE_OPTIONS: JSON.stringify({ cwd: dir, env: {}, ...options }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
}

/** `child` once its service on `port` answers /readyz; it exiting first fails with its output. */
async function ready(port: number, child: ChildProcess): Promise<ChildProcess> {
  let output = '';
  child.stdout?.on('data', (d) => { output += d; });
  child.stderr?.on('data', (d) => { output += d; });
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`service exited early: ${output}`);
    return fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
  }, 10_000);
  return child;
}
