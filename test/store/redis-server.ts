import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';

export interface RedisServer {
  url: string;
  port: number;
  /** Kill the server and wait for it to exit (idempotent). */
  stop(): Promise<void>;
  /** Stop, then start again on the same port: empty, with no scripts cached. */
  restart(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A throwaway `redis-server` on a free loopback port, without persistence, ready to answer PING. */
export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  let child = await launch(port);
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
      child = await launch(port);
    },
  };
}

async function launch(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--dir', tmpdir(), '--daemonize', 'no', '--loglevel', 'warning',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  running.add(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = Date.now() + 10_000;
  while (!(await answersPing(port))) {
    if (child.exitCode !== null) throw new Error(`redis-server exited (${child.exitCode}): ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server on port ${port} did not answer PING within 10 s: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return child;
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
