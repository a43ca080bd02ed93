import type { Output } from '../events/output.js';
import { Connection, type ConnectionOptions } from './connection.js';
import { ClientError, errorOf, isClientError, isTransient } from './errors.js';

/** How long the end of the loop waits for the claims it hands back to be taken back. */
const HAND_BACK_MS = 5000;

/** What `claims()` takes besides where the service is. */
export interface ClaimsOptions extends ConnectionOptions {
  /** Claims one poll may take, 1-100 (they are handed out one by one). @default 1 */
  max?: number;
  /** How long a poll waits for an output before the service answers none, 0-60000 ms. @default 30000 */
  waitMs?: number;
  /** Retries of an ack, nack or extend that got no answer, a 5xx or a 429, before it throws. @default 4 */
  retries?: number;
}

/** `ack()`: with agent turns on, `{turn: 'open'}` keeps the output's turn open (docs/turns.md). */
export interface AckOptions {
  turn?: 'open';
}

/** `nack()`: when to offer the output again, and what to keep as its last error if it is dead. */
export interface NackOptions {
  /** 0-86400000 ms. @default the push's backoff for the claim's attempt */
  retryAfterMs?: number;
  /** Kept as the dead letter's `lastError` when this was the last attempt (up to 500 characters). */
  error?: string;
}

/** One output this worker holds, under a lease: ack it, nack it, or extend the lease before it runs out. */
export interface Claim {
  /** The claim's id, opaque; it names this attempt at the output. */
  readonly id: string;
  /** The output event: the object the push sends and the event stream carries. */
  readonly output: Output;
  /** Which attempt at the output this claim is: 1 the first time it is offered. */
  readonly attempt: number;
  /** When the lease runs out (ms since the epoch, by the service's clock); the output is then offered again. */
  readonly leaseUntil: number;
  /**
   * The output is handled: it is `delivered`, and the session's next output can be claimed.
   * Resolves `{already: true}` for a claim acked before (an ack is safe to repeat). Throws
   * `claim_lost` (409) when the lease ran out or another claim took the output.
   */
  ack(options?: AckOptions): Promise<{ already: boolean }>;
  /** The output could not be handled now: it is offered again later, or dead past `maxAttempts`. */
  nack(options?: NackOptions): Promise<void>;
  /** Hold the output `leaseMs` more from now; resolves the lease's new end. Throws `bad_lease` (400) past `leaseMs` × `maxAttempts` in all. */
  extend(leaseMs: number): Promise<number>;
}

/** A claim as `POST /v1/claims` answers it. */
interface Offered {
  id: string;
  output: Output;
  attempt: number;
  leaseUntil: number;
}

/**
 * The outputs of the service, claimed one at a time: `POST <url>/v1/claims` long-polled, each
 * claim handed out to be acked, nacked or extended. A session never has two outputs claimed at
 * once; its next one comes after this one is acked. No answer, a 5xx or a 429 is retried after
 * a jittered backoff (or the answer's `Retry-After`), for as long as it takes; a 4xx (a bad token,
 * a bad option) throws a ClientError. `break` or an aborted `signal` ends it; claims a poll took
 * and the loop never reached are handed back (nacked) at once.
 */
export function claims(options: ClaimsOptions): AsyncGenerator<Claim, void, undefined> {
  const max = whole('max', options.max ?? 1, 1, 100);
  const waitMs = whole('waitMs', options.waitMs ?? 30_000, 0, 60_000);
  const retries = whole('retries', options.retries ?? 4, 0, 100);
  return take(new Connection(options), { max, waitMs, retries }, options.signal);
}

async function* take(
  connection: Connection,
  { max, waitMs, retries }: { max: number; waitMs: number; retries: number },
  signal: AbortSignal | undefined,
): AsyncGenerator<Claim, void, undefined> {
  let failures = 0;
  while (!signal?.aborted) {
    const asked = connection.clock.now();
    let response: Response;
    let batch: Offered[];
    try {
      response = await connection.request('POST', 'v1/claims', {
        query: { max, waitMs },
        ...(signal ? { signal } : {}),
      });
      const retryAfter = response.headers.get('retry-after');
      if (response.status !== 200 && response.status !== 204) {
        if (!isTransient(response.status)) throw await errorOf(response, 'POST /v1/claims');
        await response.body?.cancel();
        await connection.pause(failures++, retryAfter, signal);
        continue;
      }
      if (response.status === 204) await response.body?.cancel();
      batch = response.status === 204 ? [] : offeredIn(await response.json());
      if (batch.length === 0) {
        // Nothing to claim. A poll the service did not hold for its waitMs (it is stopping, or
        // waitMs is 0) is not asked again at once: that would spin.
        if (waitMs > 0 && connection.clock.now() - asked >= waitMs) failures = 0;
        else await connection.pause(failures++, retryAfter, signal);
        continue;
      }
    } catch (error) {
      if (signal?.aborted) return;
      // No answer, or one cut off before its body was read: asked again. A 4xx throws.
      if (isClientError(error) && error.status !== 0) throw error;
      await connection.pause(failures++, undefined, signal);
      continue;
    }
    failures = 0;
    let handed = 0;
    try {
      while (handed < batch.length && !signal?.aborted)
        yield new HeldClaim(connection, batch[handed++] as Offered, retries);
    } finally {
      // Stopped inside a batch: the claims the loop never saw go back to be offered at once,
      // rather than wait for their leases to run out.
      // A service that does not answer keeps the loop's end waiting HAND_BACK_MS at most.
      const done = new AbortController();
      const rest = batch.slice(handed).map((offered) => new HeldClaim(connection, offered, 0, done.signal));
      const handBack = Promise.allSettled(rest.map((claim) => claim.nack({ retryAfterMs: 0 })));
      await Promise.race([handBack, connection.sleep(HAND_BACK_MS, done.signal)]);
      done.abort(); // the timer cleared, or the nacks still waiting dropped
    }
  }
}

/** The claims of a 200 answer, checked for the fields a worker relies on. */
function offeredIn(answer: unknown): Offered[] {
  const list = (answer as { claims?: unknown } | null)?.claims;
  if (!Array.isArray(list)) throw malformed(answer);
  for (const item of list as Array<Partial<Offered> | null>) {
    if (
      typeof item?.id !== 'string' ||
      typeof item.attempt !== 'number' ||
      typeof item.leaseUntil !== 'number' ||
      typeof item.output !== 'object' ||
      item.output === null
    )
      throw malformed(answer);
  }
  return list as Offered[];
}

function malformed(answer: unknown): ClientError {
  return new ClientError(
    200,
    'bad_answer',
    `POST /v1/claims answered what is not {"claims":[{"id","output","attempt","leaseUntil"}]}: ${JSON.stringify(answer)?.slice(0, 200)}`,
  );
}

class HeldClaim implements Claim {
  readonly id: string;
  readonly output: Output;
  readonly attempt: number;
  private lease: number;

  constructor(
    private readonly connection: Connection,
    offered: Offered,
    private readonly retries: number,
    /** Ends its calls still waiting for an answer. */
    private readonly signal?: AbortSignal,
  ) {
    this.id = offered.id;
    this.output = offered.output;
    this.attempt = offered.attempt;
    this.lease = offered.leaseUntil;
  }

  get leaseUntil(): number {
    return this.lease;
  }

  async ack(options: AckOptions = {}): Promise<{ already: boolean }> {
    const answer = await this.call('ack', options.turn === 'open' ? { turn: 'open' } : {});
    return { already: answer.already === true };
  }

  async nack(options: NackOptions = {}): Promise<void> {
    const body: NackOptions = {};
    if (options.retryAfterMs !== undefined) body.retryAfterMs = options.retryAfterMs;
    if (options.error !== undefined) body.error = options.error.slice(0, 500);
    await this.call('nack', body);
  }

  async extend(leaseMs: number): Promise<number> {
    const asked = this.connection.clock.now();
    const answer = await this.call('extend', { leaseMs });
    // The service's own end of the lease when it says it; else the client's reckoning of it.
    this.lease = typeof answer.leaseUntil === 'number' ? answer.leaseUntil : asked + leaseMs;
    return this.lease;
  }

  /** POST one action on this claim; no answer, a 5xx or a 429 is tried again up to `retries` times. */
  private async call(action: 'ack' | 'nack' | 'extend', body: object): Promise<Record<string, unknown>> {
    const path = `v1/claims/${encodeURIComponent(this.id)}/${action}`;
    for (let failures = 0; ; failures += 1) {
      let response: Response;
      try {
        response = await this.connection.request('POST', path, {
          body,
          ...(this.signal ? { signal: this.signal } : {}),
        });
      } catch (error) {
        if (failures >= this.retries) throw error;
        await this.connection.pause(failures, undefined);
        continue;
      }
      if (response.ok) {
        const text = await response.text();
        return text ? (JSON.parse(text) as Record<string, unknown>) : {};
      }
      if (!isTransient(response.status) || failures >= this.retries) throw await errorOf(response, `POST /${path}`);
      const retryAfter = response.headers.get('retry-after');
      await response.body?.cancel();
      await this.connection.pause(failures, retryAfter);
    }
  }
}

/** A whole number option in range, or a RangeError naming it. */
function whole(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`${name} must be a whole number from ${min} to ${max} (got ${value})`);
  return value;
}
