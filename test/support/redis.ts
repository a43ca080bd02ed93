import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from './net.js';

export interface RedisServer {
  url: string;
  port: number;
  /** Kill the server and wait for it to exit (idempotent). */
  stop(): Promise<void>;
  /** Stop, then start again on the same port with no scripts cached: empty, unless started with persistence in a `dir`. */
  restart(): Promise<void>;
  /** SIGSTOP the server: connections stay open and nothing answers (a hung host), until `thaw`. */
  freeze(): void;
  thaw(): void;
}

export interface RedisServerOptions {
  /** Extra `redis-server` arguments, after the defaults (e.g. `--appendonly yes --appendfsync always`). */
  args?: readonly string[];
  /** Working directory for persistence files. @default the system temp dir */
  dir?: string;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A redis-server of a file's tests (`useRedis`), and a client for the tests' own commands. */
export interface UsedRedis extends RedisServer {
  /** A client for the tests' own commands (FLUSHALL, CONFIG, INFO), opened at first use, closed after the tests. */
  readonly admin: Redis;
}

/**
 * A `redis-server` for the tests of the file or `describe` block that calls this: started
 * before them, killed after them. Its fields read the running server, so read them in a test
 * or a hook registered after this call (hooks run in the order they were registered, after-hooks
 * in reverse).
 */
export function useRedis(options: RedisServerOptions = {}): UsedRedis {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis(options);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });
  const running = (): RedisServer => {
    if (!server) throw new Error('the redis-server of this file has not started: read it in a test or a hook');
    return server;
  };
  return {
    get url() {
      return running().url;
    },
    get port() {
      return running().port;
    },
    get admin() {
      return (admin ??= new Redis(running().url));
    },
    stop: () => running().stop(),
    restart: () => running().restart(),
    freeze: () => running().freeze(),
    thaw: () => running().thaw(),
  };
}

/** A throwaway `redis-server` on a free loopback port, without persistence unless `args` ask for it, ready to answer PING. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  let port = await freePort();
  const start = () => launch(port, options.dir ?? tmpdir(), options.args ?? []);
  // A port found free can be taken before the server binds it (another file's server, or an
  // outgoing connection's ephemeral port): then the server exits, and a fresh port is tried.
  let child = await startOnFreePort();
  async function startOnFreePort(attempt = 1): Promise<ChildProcess> {
    try {
      return await start();
    } catch (error) {
      if (!(error instanceof ServerExited) || attempt >= 5) throw error;
      port = await freePort();
      return startOnFreePort(attempt + 1);
    }
  }
  const stop = async (): Promise<void> => {
    const exiting = child;
    if (exiting.exitCode !== null || exiting.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => exiting.once('exit', () => resolve()));
    exiting.kill('SIGKILL');
    await exited;
    running.delete(exiting);
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    async restart() {
      await stop();
      child = await start();
    },
    freeze: () => void child.kill('SIGSTOP'),
    thaw: () => void child.kill('SIGCONT'),
  };
}

async function launch(port: number, dir: string, args: readonly string[]): Promise<ChildProcess> {
  // Later arguments win: `args` may turn persistence on.
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  running.add(child);
  // redis-server writes its own log (a port in use, a bad argument) to stdout.
  let stderr = '';
  const keep = (chunk: Buffer): void => void (stderr = (stderr + chunk.toString()).slice(-2000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const deadline = Date.now() + 10_000;
  // The server on the port must be this child: if the port was taken meanwhile (another test
  // file's server), ours exits, and a PING would be answered by the other one.
  while (!(await answeredBy(port, child.pid))) {
    if (child.exitCode !== null)
      throw new ServerExited(`redis-server on port ${port} exited (${child.exitCode}): ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server on port ${port} did not answer PING within 10 s: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return child;
}

/** The server exited before it answered: its port was taken, or its arguments refused. */
class ServerExited extends Error {}

/** Whether the redis-server answering on `port` is the process `pid`. */
function answeredBy(port: number, pid: number | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('INFO server\r\n'));
    socket.on('data', (data) => {
      reply += data.toString();
      const match = /process_id:(\d+)/.exec(reply);
      if (match) done(Number(match[1]) === pid);
      else if (reply.startsWith('-')) done(false); // still loading, or an error
    });
  });
}
