import { describe, expect, it } from 'vitest';
import { tempDir, until, useTeardown } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { freePort } from '../support/net.js';
import { runMain } from '../support/child.js';
import { rawPoll, say, startClaims } from '../support/claims.js';

const waitingPolls = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^inbox_claim_polls_waiting (\d+)$/m.exec(text)?.[1]);
};

describe('claim polls and the connections they hold', () => {
  const { services, children } = useTeardown();

  it('lets 1,000 idle polls wait up to half of server.maxConnections, refuses the rest with 503 too_many_polls, and a drain ends the waiting ones with 204', async () => {
    const clock = new ManualClock();
    const running = await startClaims(clock, 'memory', { server: { maxConnections: 1100 } });
    services.push(running);
    const settled: Array<{ status: number | 'dropped'; body: string }> = [];
    const polls = Array.from({ length: 1000 }, () =>
      rawPoll(running.url, 'waitMs=60000').then((answered) => {
        settled.push(answered);
        return answered;
      }),
    );
    await until(async () => settled.length === 450 && (await waitingPolls(running.url)) === 550, 30_000);
    expect(settled.filter((r) => r.status === 503 && r.body.includes('"code":"too_many_polls"'))).toHaveLength(450);

    // An output goes to exactly one of the waiting polls.
    const output = await say(running, clock, 'cli:a', 'for one worker');
    await until(() => settled.length === 451);
    expect(settled[450]).toMatchObject({ status: 200, body: expect.stringContaining(`"id":"${output.id}"`) });

    // The service stopping (SIGTERM's drain) ends every other poll at once.
    running.intake.drain();
    const answers = await Promise.all(polls);
    expect(answers.filter((r) => r.status === 204)).toHaveLength(549);
  });

  it('answers 50 waiting polls 204 as soon as SIGTERM comes, long before the drain ends, and polls during the drain at once', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const service = runMain(tempDir().path, {
      PORT: String(port),
      INTAKE_STORE: 'memory',
      INTAKE_AGENT_CLAIMS_LEASE_MS: '30000',
      INTAKE_DRAIN_MS: '600000',
      LOG_LEVEL: 'info',
    });
    children.push(service.child);
    await until(
      async () =>
        (await fetch(`${url}/readyz`).then(
          (r) => r.status,
          () => 0,
        )) === 200,
      15_000,
    );
    const polls = Array.from({ length: 50 }, () => rawPoll(url, 'waitMs=60000'));
    await until(async () => (await waitingPolls(url)) === 50, 15_000);
    service.child.kill('SIGTERM');
    expect((await Promise.all(polls)).map((r) => r.status)).toEqual(Array(50).fill(204));
    expect(service.child.exitCode).toBe(null);
    expect((await rawPoll(url, 'waitMs=60000')).status).toBe(204);
    // The second signal cuts the ten minutes of drain short.
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });

  it('exits on SIGTERM without a drain period while 50 polls wait, each answered 204', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const service = runMain(tempDir().path, {
      PORT: String(port),
      INTAKE_STORE: 'memory',
      INTAKE_AGENT_CLAIMS_MAX_ATTEMPTS: '5',
      INTAKE_DRAIN_MS: '0',
      LOG_LEVEL: 'info',
    });
    children.push(service.child);
    await until(
      async () =>
        (await fetch(`${url}/readyz`).then(
          (r) => r.status,
          () => 0,
        )) === 200,
      15_000,
    );
    const polls = Array.from({ length: 50 }, () => rawPoll(url, 'waitMs=60000'));
    await until(async () => (await waitingPolls(url)) === 50, 15_000);
    service.child.kill('SIGTERM');
    expect((await Promise.all(polls)).map((r) => r.status)).toEqual(Array(50).fill(204));
    expect(await service.exited).toBe(0);
    expect(service.stdout()).toContain('"msg":"stopped cleanly"');
  });
});
