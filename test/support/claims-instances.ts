import { postJson, startService, until, type Running } from './helpers.js';
import { REAL_TIME_WINDOW, REAL_TIME_WINDOW_ENV } from './windows.js';

/** The delivery view of output `id` as `GET /v1/events/<id>` on `url` shows it. */
export async function delivery(url: string, id: string): Promise<Record<string, unknown>> {
  return ((await (await fetch(`${url}/v1/events/${id}`)).json()) as { delivery: Record<string, unknown> }).delivery;
}

/** The value of metric `name` (no labels) on `url`'s `/metrics`; NaN when it is not there. */
export async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}

/** The dead letters `url` lists. */
export async function deadLetters(
  url: string,
): Promise<{ count: number; deadletters: Array<Record<string, unknown>> }> {
  return (await (await fetch(`${url}/v1/deadletters`)).json()) as never;
}

/** The claims settings of an instance; a buffer of one message flushes as it fills: each message is one output. */
export function claimsSettings(
  store: string,
  keyPrefix: string,
  claims: { leaseMs?: number; maxAttempts?: number } = {},
  agent: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    ...extra,
    store,
    redis: { keyPrefix, commandTimeoutMs: 3000 },
    debounce: { ...REAL_TIME_WINDOW, maxMessages: 1 },
    agent: { ...agent, claims: { leaseMs: 10_000, maxAttempts: 10, ...claims } },
  };
}

/** The same settings as the service process's environment (`startChild`). */
export function claimsEnv(
  store: string,
  keyPrefix: string,
  claims: { leaseMs: number; maxAttempts: number },
): Record<string, string> {
  return {
    ...REAL_TIME_WINDOW_ENV,
    INTAKE_DEBOUNCE_MAX_MESSAGES: '1',
    INTAKE_STORE: store,
    INTAKE_REDIS_KEY_PREFIX: keyPrefix,
    INTAKE_REDIS_COMMAND_TIMEOUT_MS: '3000',
    INTAKE_AGENT_CLAIMS_LEASE_MS: String(claims.leaseMs),
    INTAKE_AGENT_CLAIMS_MAX_ATTEMPTS: String(claims.maxAttempts),
  };
}

/** Two instances sharing `store` under one key prefix of their own (`agent`: its other settings; `extra`: the rest). */
export async function twoInstances(
  services: Running[],
  store: string,
  keyPrefix: string,
  claims: { leaseMs?: number; maxAttempts?: number } = {},
  agent: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<[Running, Running]> {
  const settings = claimsSettings(store, keyPrefix, claims, agent, extra);
  const [a, b] = await Promise.all([startService(settings), startService(settings)]);
  services.push(a, b);
  return [a, b];
}

/** Post `contents` to `running` as messages of `sessionKey`, in order, and wait until `observer` sees their outputs. */
export async function post(
  running: Running,
  observer: Running,
  sessionKey: string,
  contents: readonly string[],
): Promise<Array<{ id: string; seq: number; content: string }>> {
  const before = await observer.intake.store.lastSeq();
  const messages = contents.map((content) => ({ id: `${sessionKey}/${content}`, sessionKey, content }));
  const posted = await postJson(`${running.url}/webhooks/generic`, messages);
  if (posted.status !== 200) throw new Error(`delivery refused: ${JSON.stringify(posted.body)}`);
  await until(async () => (await observer.intake.store.lastSeq()) >= before + contents.length, 10_000);
  return (await observer.intake.store.outboxAfter(before, 100))
    .map((record) => ({ seq: record.seq, ...(JSON.parse(record.body) as { id: string; content: string }) }))
    .filter((output) => contents.includes(output.content));
}
