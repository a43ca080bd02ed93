import { createServer } from 'node:net';

/**
 * Ports handed out by `freePort`: below Linux's ephemeral range (32768-60999), where every
 * `listen(0)` and outbound connection of the suite takes its ports, and split between vitest's
 * workers, so a port picked here is not taken by another test between the pick and its use.
 */
const FIRST = 20_000;
const PER_WORKER = 600;
const worker = Number(process.env.VITEST_POOL_ID ?? '1');
const base = FIRST + ((worker - 1) % 20) * PER_WORKER;
let next = Math.floor(Math.random() * PER_WORKER);

function bindable(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on right now, and no other test worker will pick. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < PER_WORKER; tries += 1) {
    const port = base + (next++ % PER_WORKER);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${base}-${base + PER_WORKER - 1}`);
}
