import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, until } from './support/helpers.js';
import { freePort } from './support/net.js';
import { runMain as run } from './support/child.js';

const ready = (port: number) =>
  fetch(`http://127.0.0.1:${port}/readyz`).then(
    (r) => r.ok,
    () => false,
  );

describe('the service process at start and stop', () => {
  const children: ChildProcess[] = [];
  const blockers: Server[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const server of blockers.splice(0)) server.close();
  });

  it('exits on SIGTERM even when the reader of its log output is gone', async () => {
    const port = await freePort();
    // A short drain period (the default is 5 s): the stop still logs its draining line into the broken pipe.
    const service = run(tempDir().path, { PORT: String(port), LOG_LEVEL: 'info', INTAKE_DRAIN_MS: '100' });
    children.push(service.child);
    await until(() => ready(port), 10_000);
    // The log reader dies first: the pipe's read end closes, and every later log write meets EPIPE.
    service.child.stdout?.destroy();
    await fetch(`http://127.0.0.1:${port}/webhooks/generic`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"sessionKey":"cli:a","content":"hi"}',
    });
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });

  it('names server.port / PORT in one line when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    blockers.push(blocker);
    const { port } = blocker.address() as AddressInfo;
    const service = run(tempDir().path, { PORT: String(port), INTAKE_STORE: 'memory' });
    children.push(service.child);
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toBe(
      `agent-intake: server.port / PORT ${port} is in use by another process on 127.0.0.1; stop it or choose another port\n`,
    );
  });

  it('names the store path in one line when it cannot be written', async () => {
    const dir = tempDir().path;
    // A file where the store's folder should be: nobody, not even root, can create the database there.
    writeFileSync(join(dir, 'blocker'), '');
    // Port 0: any port will do, the store fails after the listen.
    const service = run(dir, { PORT: '0', INTAKE_STORE: 'sqlite:./blocker/intake.db' });
    children.push(service.child);
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(
      new RegExp(
        `^agent-intake: store path ${join(dir, 'blocker', 'intake.db').replace(/[.]/g, '\\.')} is not writable \\(store / INTAKE_STORE\\): E[A-Z]+: [^\\n]*\\n$`,
      ),
    );
    // Node's message names its code already: once is enough.
    expect(service.stderr()).not.toMatch(/(E[A-Z]+): \1:/);
  });

  it('refuses an agent.secret shorter than Standard Webhooks allows, naming it', async () => {
    const service = run(tempDir().path, {
      INTAKE_AGENT_URL: 'http://127.0.0.1:9/inbox',
      INTAKE_AGENT_SECRET: 'whsec_' + Buffer.from('abc').toString('base64'),
    });
    children.push(service.child);
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(
      /^agent-intake: agent\.secret \(INTAKE_AGENT_SECRET\) must be a Standard Webhooks secret.*decodes to 3 bytes\n$/,
    );
  });

  it('reads a .env file in its working directory, under the environment', async () => {
    const dir = tempDir().path;
    const port = await freePort();
    // The port comes from .env; the bad value there is overridden by the environment, or start-up would fail.
    writeFileSync(join(dir, '.env'), `PORT=${port}\nINTAKE_STORE=memory\nINTAKE_DEBOUNCE_MEDIA=some\n`);
    const service = run(dir, { INTAKE_DEBOUNCE_MEDIA: 'all', INTAKE_DRAIN_MS: '0' });
    children.push(service.child);
    await until(async () => {
      if (service.child.exitCode !== null) throw new Error(`exited: ${service.stderr()}`);
      return ready(port);
    }, 10_000);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });
});
