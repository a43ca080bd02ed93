import { backoffMs, type BackoffRange } from '../core/backoff.js';
import type { Clock } from '../core/clock.js';
import { retryAfterMs } from '../core/retry-after.js';
import { ClientError } from './errors.js';

/** The timers the client waits on. */
export type ClientClock = Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;

/** Where the service is and how to reach it; shared by `claims()` and `events()`. */
export interface ConnectionOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8787` (a path prefix, for a mounted intake, is kept). */
  url: string;
  /** The operator token (`server.apiToken`), sent as `Authorization: Bearer <token>`. @default none */
  token?: string;
  /** Aborting it ends the iterator: its `for await` loop finishes without an error. */
  signal?: AbortSignal;
  /** Pacing of the retries after a failure: the first wait's ceiling, doubled per failure up to `maxMs`, jittered. @default { minMs: 500, maxMs: 30000 } */
  backoff?: BackoffRange;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Timers of the waits between retries. @default the global timers */
  clock?: ClientClock;
  /** The jitter's source, in [0, 1). @default Math.random */
  random?: () => number;
}

const DEFAULT_BACKOFF: BackoffRange = { minMs: 500, maxMs: 30_000 };

/**
 * The global timers, kept referenced: a worker whose only work left is to wait before it
 * reconnects stays alive (the service's own clock lets its timers go, so it can exit).
 */
const globalTimers: ClientClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** One service's address, token, fetch and retry pacing: every request of an iterator goes through it. */
export class Connection {
  readonly clock: ClientClock;
  private readonly base: URL;
  private readonly token: string | undefined;
  private readonly fetch: typeof fetch;
  private readonly backoff: BackoffRange;
  private readonly random: () => number;

  constructor(options: ConnectionOptions) {
    let base: URL;
    try {
      base = new URL(options.url);
    } catch {
      throw new TypeError(`url must be the service's base URL, like http://127.0.0.1:8787 (got "${options.url}")`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:')
      throw new TypeError(`url must be http: or https: (got "${options.url}")`);
    // Relative paths resolve under the base's own path: `http://host/intake` + `v1/claims`.
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    base.search = '';
    base.hash = '';
    this.base = base;
    this.token = options.token;
    this.fetch = options.fetch ?? globalThis.fetch;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.clock = options.clock ?? globalTimers;
    this.random = options.random ?? Math.random;
  }

  /**
   * Send one request (a JSON body when `body` is given). A request that got no answer throws a
   * ClientError with status 0, except when `signal` was aborted: then its AbortError.
   */
  async request(
    method: 'GET' | 'POST',
    path: string,
    init: {
      query?: Record<string, string | number>;
      body?: unknown;
      headers?: Record<string, string>;
      signal?: AbortSignal;
    },
  ): Promise<Response> {
    const url = new URL(path, this.base);
    for (const [name, value] of Object.entries(init.query ?? {})) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { ...init.headers };
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await this.fetch(url, {
        method,
        headers,
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        ...(init.signal ? { signal: init.signal } : {}),
      });
    } catch (error) {
      if (init.signal?.aborted) throw error;
      // undici's `fetch failed` names the reason in its cause (ECONNREFUSED, ENOTFOUND, ...).
      const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
      const reason = String(cause?.code ?? cause?.message ?? (error as Error).message);
      throw new ClientError(0, 'unreachable', `${method} ${url.pathname} got no answer: ${reason}`, { cause: error });
    }
  }

  /**
   * Wait before the next try, after `failures` failures in a row (0: the first): the jittered
   * backoff, or longer when the answer's `Retry-After` asks for it. Resolves early when `signal`
   * is aborted.
   */
  pause(failures: number, retryAfter: string | null | undefined, signal?: AbortSignal): Promise<void> {
    const backoff = backoffMs(failures, this.backoff, this.random);
    const asked = retryAfterMs(retryAfter ?? undefined, this.clock.now(), this.backoff.maxMs) ?? 0;
    return this.sleep(Math.max(backoff, asked), signal);
  }

  /** Wait `ms` on the clock, or less when `signal` is aborted (the timer is then cleared). */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        resolve();
      };
      const timer = this.clock.setTimeout(wake, ms);
      signal?.addEventListener('abort', wake, { once: true });
    });
  }
}
