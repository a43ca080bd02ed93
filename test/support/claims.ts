import { request } from 'node:http';
import type { Output } from '../../src/events/output.js';
import type { Store } from '../../src/core/ports/index.js';
import { postJson, startService, until, type Running } from './helpers.js';
import type { ManualClock } from './manual-clock.js';

/** A claim as `POST /v1/claims` answers it. */
export interface ClaimBody {
  id: string;
  output: { id: string; seq: number; sessionKey: string; content: string } & Record<string, unknown>;
  attempt: number;
  leaseUntil: number;
}

/** A service whose agent workers claim outputs, on `store`, with every window on `clock`. */
export function startClaims(
  clock: ManualClock,
  store: 'memory' | 'sqlite',
  extra: Record<string, unknown> = {},
  dir?: string,
  /** A store of the test's own (memory), in place of the one `store` names. */
  own?: Store,
): Promise<Running> {
  const claims = (extra.agent as { claims?: object } | undefined)?.claims ?? {};
  return startService(
    {
      ...(store === 'memory' ? { store: 'memory' } : {}),
      debounce: { windowMs: 0, maxWaitMs: 0 },
      ...extra,
      agent: { claims: { leaseMs: 10_000, maxAttempts: 3, ...claims } },
    },
    { clock, ...(dir ? { dir } : {}), ...(own ? { store: own } : {}) },
  );
}

/**
 * Say `content` in session `sessionKey` and let its output be committed (the debounce window runs
 * on the manual clock). Resolves the output.
 */
export async function say(
  running: Running,
  clock: ManualClock,
  sessionKey: string,
  content: string,
): Promise<Output & { id: string }> {
  let committed: (Output & { id: string }) | undefined;
  const listener = (output: Output) => {
    if ((output as { content?: string }).content === content) committed = output as Output & { id: string };
  };
  running.intake.on('chat.processedMessage', listener);
  try {
    const posted = await postJson(`${running.url}/webhooks/generic`, {
      id: `${sessionKey}/${content}`,
      sessionKey,
      content,
    });
    if (posted.status !== 200) throw new Error(`delivery refused: ${JSON.stringify(posted.body)}`);
    await until(async () => {
      await clock.advance(0);
      return committed;
    });
    return committed!;
  } finally {
    running.intake.off('chat.processedMessage', listener);
  }
}

/** `POST /v1/claims?<query>`: the status and, on 200, the claims. */
export async function claim(
  running: Running,
  query = 'waitMs=0',
): Promise<{ status: number; claims: ClaimBody[]; body: any }> {
  const response = await fetch(`${running.url}/v1/claims?${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  const text = await response.text();
  const body = text === '' ? undefined : JSON.parse(text);
  return { status: response.status, claims: (body?.claims as ClaimBody[] | undefined) ?? [], body };
}

/** `POST /v1/claims/<id>/<action>` with `body`. */
export function answer(running: Running, id: string, action: 'ack' | 'nack' | 'extend', body: unknown = {}) {
  return postJson(`${running.url}/v1/claims/${encodeURIComponent(id)}/${action}`, body);
}

/**
 * A poll on its own socket (no shared pool: each holds one connection, as a worker's would),
 * resolving its status, or `dropped` when the server closed the socket on arrival.
 */
export function rawPoll(url: string, query: string): Promise<{ status: number | 'dropped'; body: string }> {
  return new Promise((resolve) => {
    const req = request(
      `${url}/v1/claims?${query}`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', () => resolve({ status: 'dropped', body }));
      },
    );
    req.on('error', () => resolve({ status: 'dropped', body: '' }));
    req.end();
  });
}
