import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run, type Child } from '../support/child.js';
import { postJson, startService, tempDir, until, useTeardown, type Running } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const TOKEN = 'operator-token';
const WORKER = join(import.meta.dirname, 'worker.mjs');
const SESSIONS = 200;
const ROUNDS = 25;
const LEASE_MS = 2000;
const { services, children } = useTeardown();

/** An acked output as a worker wrote it. */
interface Acked {
  sessionKey: string;
  seq: number;
  id: string;
  attempt: number;
  claimedAt: number;
  ackingAt: number;
}

function ackedIn(file: string): Acked[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [sessionKey, seq, id, attempt, claimedAt, ackingAt] = line.split(' ');
      return {
        sessionKey: sessionKey!,
        seq: Number(seq),
        id: id!,
        attempt: Number(attempt),
        claimedAt: Number(claimedAt),
        ackingAt: Number(ackingAt),
      };
    });
}

let redis: RedisServer | undefined;
afterAll(async () => {
  await redis?.stop();
});

/** The instances of one deployment: one on memory or SQLite, two sharing one real redis-server. */
const forms: Array<[name: string, start: () => Promise<Running[]>]> = [
  ['the memory store', async () => [await instance('memory')]],
  ['the SQLite store', async () => [await instance(undefined)]],
  [
    'two instances on one redis-server',
    async () => {
      redis ??= await startRedis();
      const url = redis.url;
      return [await instance(url), await instance(url)];
    },
  ],
];

async function instance(store: string | undefined): Promise<Running> {
  const service = await startService({
    ...(store ? { store } : {}),
    redis: { keyPrefix: `workers${process.pid}`, commandTimeoutMs: 3000 },
    server: { apiToken: TOKEN },
    agent: { claims: { leaseMs: LEASE_MS, maxAttempts: 10 } },
    // A buffer of one message flushes as it fills: each message is one output.
    debounce: { windowMs: 20, maxMessages: 1 },
  });
  services.push(service);
  return service;
}

describe.each(forms)('agent workers on claims, %s', (_name, deployment) => {
  it('4 worker processes take 5,000 outputs of 200 sessions: each acked once, in seq order per session, never two of a session at once, and the output of a worker killed mid-claim is offered again after leaseMs', async () => {
    const instances = await deployment();
    const service = instances[0]!;
    const dir = tempDir().path;
    const workers: Child[] = [];
    for (let n = 0; n < 4; n++) {
      // Workers spread over the instances: any instance answers for the deployment.
      const url = instances[n % instances.length]!.url;
      const env = { INTAKE_URL: url, INTAKE_TOKEN: TOKEN, OUT: join(dir, `worker-${n}.log`), MAX: '5' };
      const worker = run(process.execPath, [WORKER], process.cwd(), n === 3 ? { ...env, CRASH_AFTER: '100' } : env);
      children.push(worker.child);
      workers.push(worker);
    }

    // Round by round, each session's messages in the order it sent them (an array holds up to 100).
    for (let round = 0; round < ROUNDS; round++) {
      for (let first = 0; first < SESSIONS; first += 100) {
        const batch = Array.from({ length: 100 }, (_, i) => ({
          id: `m-${first + i}-${round}`,
          sessionKey: `cli:s${first + i}`,
          content: `round ${round}`,
        }));
        const to = instances[(round + first) % instances.length]!;
        expect((await postJson(`${to.url}/webhooks/generic`, batch)).status).toBe(200);
      }
    }
    const total = SESSIONS * ROUNDS;
    await until(async () => (await service.intake.store.lastSeq()) === total, 60_000);
    const outputs = await service.intake.store.outboxAfter(0, total);
    expect(outputs).toHaveLength(total);

    const files = workers.map((_, n) => join(dir, `worker-${n}.log`));
    const acked = () => files.flatMap(ackedIn);
    await until(
      () => acked().length >= total,
      120_000,
      () => ({ acked: acked().length }),
    );
    const lines = acked();

    // Each output acked exactly once, as what the store holds.
    expect(lines).toHaveLength(total);
    const byId = new Map(lines.map((line) => [line.id, line]));
    expect(byId.size).toBe(total);
    for (const record of outputs)
      expect(byId.get(record.id), record.id).toMatchObject({ seq: record.seq, sessionKey: record.sessionKey });

    // Per session: taken in seq order, each one after the previous one's ack was sent.
    const sessions = new Map<string, Acked[]>();
    for (const line of lines) sessions.set(line.sessionKey, [...(sessions.get(line.sessionKey) ?? []), line]);
    expect(sessions.size).toBe(SESSIONS);
    for (const [sessionKey, held] of sessions) {
      held.sort((a, b) => a.claimedAt - b.claimedAt || a.seq - b.seq);
      for (let i = 1; i < held.length; i++) {
        expect(held[i]!.seq, sessionKey).toBeGreaterThan(held[i - 1]!.seq);
        expect(held[i]!.claimedAt, sessionKey).toBeGreaterThanOrEqual(held[i - 1]!.ackingAt);
      }
    }

    // The killed worker's claim: offered again once its lease ran out, and acked by another.
    const crashed = workers[3]!;
    expect(await crashed.exited).toBeNull();
    expect(crashed.child.signalCode).toBe('SIGKILL');
    const lost = JSON.parse(crashed.stdout().trim()) as { outputId: string; attempt: number; leaseUntil: number };
    const retaken = byId.get(lost.outputId)!;
    expect(retaken.attempt).toBeGreaterThan(lost.attempt);
    expect(retaken.claimedAt).toBeGreaterThanOrEqual(lost.leaseUntil);
    expect(ackedIn(files[3]!).some((line) => line.id === lost.outputId)).toBe(false);
  }, 240_000);
});
