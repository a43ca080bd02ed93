import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pino from 'pino';
import { afterEach } from 'vitest';
import { silent } from './logger.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { loadConfig } from '../../src/service/configure.js';
import type { Clock } from '../../src/core/clock.js';
import type { Metrics } from '../../src/metrics/index.js';
import type { Store } from '../../src/core/ports/index.js';

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
export async function startService(
  file: Record<string, unknown> = {},
  options: {
    dir?: string;
    metrics?: Metrics;
    clock?: Clock;
    logger?: pino.Logger;
    store?: Store;
    socketPingMs?: number;
  } = {},
): Promise<Running> {
  const dir = options.dir ?? tempDir().path;
  const config = loadConfig({
    env: {},
    cwd: dir,
    file: {
      store: `sqlite:${join(dir, 'intake.db')}`,
      media: { dir: join(dir, 'media') },
      logLevel: 'silent',
      ...file,
      server: { port: 0, ...(file.server as object | undefined) },
    },
  });
  const intake = await createIntake({
    config,
    logger: options.logger ?? silent,
    cwd: dir,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.store ? { store: options.store } : {}),
    ...(options.socketPingMs ? { socketPingMs: options.socketPingMs } : {}),
  });
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
    headers: { 'content-type': 'application/json' },
    query: new URLSearchParams(),
    now,
    body: Buffer.from(JSON.stringify(body)),
  });
}

export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
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

/**
 * What each test of the calling file starts and must stop after it, in this order: child
 * processes killed (SIGKILL), services stopped together, then every other cleanup in turn.
 */
export function useTeardown(): { services: Running[]; children: ChildProcess[]; cleanups: Array<() => unknown> } {
  const services: Running[] = [];
  const children: ChildProcess[] = [];
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(services.splice(0).map((service) => service.stop()));
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  return { services, children, cleanups };
}
