import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { Transform, type Readable, type TransformCallback, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request, type Dispatcher } from 'undici';
import { backoffMs } from '../core/backoff.js';
import { systemClock, type Clock } from '../core/clock.js';
import { retryAfterMs } from '../core/retry-after.js';
import { deadline, wait } from './deadline.js';
import { mediaConnections, type MediaConnections } from './connections.js';
import { MediaError } from '../core/errors.js';
import { BlockedAddressError, checkUrl, type UrlPolicy } from './guard.js';
import { diskFailure, TEMP_SUFFIX } from './sandbox.js';
import type { Release } from './slots.js';

const MAX_REDIRECTS = 3;
const SNIFF_BYTES = 4100;

export interface FetchOptions extends UrlPolicy {
  maxBytes: number;
  /** Budget of the whole download from this call: waiting for a slot, every attempt and every wait. */
  timeoutMs: number;
  retries: number;
  /** Headers for the first origin only (platform auth); dropped across origins. */
  headers?: Record<string, string>;
  /** Abort from outside (shutdown, a deadline that started earlier); a `MediaError` reason is the failure reported. */
  signal?: AbortSignal;
  /** The shortest first retry wait (the shared backoff: each wait 1x to 2x this, doubled per retry). @default 250 */
  minBackoffMs?: number;
  /** Where connections come from (the guard lives there). @default made for this call, closed after it */
  connections?: MediaConnections;
  /** Deadline, backoff, Retry-After dates. @default systemClock */
  clock?: Clock;
  /**
   * Take a connection slot for one attempt. The slot is given back once the attempt's response
   * bodies are consumed or destroyed, and is not held while waiting to retry. @default no limit
   */
  acquire?: (signal: AbortSignal) => Promise<Release>;
  /** Jitter in [0, 1). @default Math.random */
  random?: () => number;
  /** Open the temporary file the body is written to (a new file, owner only). @default fs.createWriteStream */
  openFile?: (path: string) => Writable;
}

export interface Fetched {
  bytes: number;
  sha256: string;
  /** The first bytes, for type sniffing. */
  head: Buffer;
  /** Content-Type the server declared. */
  declaredType?: string;
}

/**
 * Stream `url` into `target` with the guard, the byte cap, one deadline and retries. The body
 * goes to `target + .part` and is renamed into place only when complete; nothing is left on
 * failure.
 */
export async function fetchToFile(url: string, target: string, options: FetchOptions): Promise<Fetched> {
  const clock = options.clock ?? systemClock;
  const budget = deadline(
    clock,
    options.timeoutMs,
    () => new MediaError('timeout', `no complete download within ${options.timeoutMs} ms`, false),
  );
  const signal = options.signal ? AbortSignal.any([budget.signal, options.signal]) : budget.signal;
  const own = options.connections ? undefined : mediaConnections();
  const context: Attempt = { options, signal, clock, connections: options.connections ?? (own as MediaConnections) };
  try {
    for (let retry = 0; ; retry++) {
      let failure: MediaError;
      try {
        const release = options.acquire ? await options.acquire(signal) : undefined;
        try {
          return await attempt(url, target, context);
        } finally {
          release?.();
        }
      } catch (error) {
        failure = failureOf(error, signal);
      }
      if (!failure.retryable || retry >= options.retries) throw failure;
      // The shared backoff with `minBackoffMs` as the shortest first wait (the ceiling starts at
      // twice it) and no cap of its own: the download's deadline bounds every wait.
      const backoff = backoffMs(
        retry,
        { minMs: 2 * (options.minBackoffMs ?? 250), maxMs: Number.POSITIVE_INFINITY },
        options.random ?? Math.random,
      );
      const delay = failure.retryAfterMs ?? backoff;
      // A wait that outlives the budget would only end in a timeout; report what the server said.
      if (delay >= budget.remaining()) throw failure;
      await wait(clock, delay, signal);
    }
  } catch (error) {
    throw failureOf(error, signal);
  } finally {
    budget.clear();
    await own?.close();
  }
}

interface Attempt {
  options: FetchOptions;
  signal: AbortSignal;
  clock: Clock;
  connections: MediaConnections;
}

async function attempt(
  first: string,
  target: string,
  { options, signal, clock, connections }: Attempt,
): Promise<Fetched> {
  let current = first;
  let headers = options.headers ?? {};
  const origin = originOf(first);
  for (let hop = 0; ; hop++) {
    const checked = checkUrl(current, options);
    if ('refusal' in checked)
      throw new MediaError(
        hop === 0 && checked.refusal === 'not a valid URL' ? 'bad_url' : 'blocked',
        checked.refusal,
        false,
      );
    // Every hop has its own connection, closed before the next hop or the slot is given back:
    // an unwanted body (an error page, a redirect's) is cut with it, never drained.
    const connection = connections.open(checked.url, checked.exempt);
    try {
      // No undici timers: the one deadline (on the injected clock) bounds headers and body alike.
      const response: Dispatcher.ResponseData = await request(checked.url, {
        method: 'GET',
        headers: { 'user-agent': 'agent-intake', ...headers },
        signal,
        dispatcher: connection.dispatcher,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      // Closing the connection errors a body nobody reads; that is expected, not a crash.
      response.body.on('error', () => undefined);
      const { statusCode } = response;
      if (statusCode >= 300 && statusCode < 400 && response.headers.location) {
        if (hop >= MAX_REDIRECTS) throw new MediaError('http', `more than ${MAX_REDIRECTS} redirects`, false);
        current = new URL(String(response.headers.location), checked.url).toString();
        // Platform credentials go to the platform's origin only.
        if (originOf(current) !== origin) headers = {};
        continue;
      }
      if (statusCode !== 200) {
        const retryable = statusCode >= 500 || statusCode === 429 || statusCode === 408;
        throw new MediaError(
          'http',
          `HTTP ${statusCode}`,
          retryable,
          retryAfterMs(response.headers['retry-after'], clock.now(), options.timeoutMs),
        );
      }
      const declared = Number(response.headers['content-length']);
      if (Number.isFinite(declared) && declared > options.maxBytes) {
        throw new MediaError(
          'too_large',
          `declared ${declared} bytes, over media.maxBytes (${options.maxBytes})`,
          false,
        );
      }
      const type = response.headers['content-type'];
      return await stream(response.body, target, options, signal, typeof type === 'string' ? type : undefined);
    } finally {
      await connection.close();
    }
  }
}

const openTemporary = (path: string): Writable => createWriteStream(path, { flags: 'wx', mode: 0o600 });

async function stream(
  body: Readable,
  target: string,
  options: FetchOptions,
  signal: AbortSignal,
  declaredType?: string,
): Promise<Fetched> {
  const { maxBytes } = options;
  const temp = target + TEMP_SUFFIX;
  const sha = createHash('sha256');
  const head: Buffer[] = [];
  let headBytes = 0;
  let bytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      bytes += chunk.length;
      if (bytes > maxBytes)
        return done(new MediaError('too_large', `body passed media.maxBytes (${maxBytes}) while streaming`, false));
      sha.update(chunk);
      if (headBytes < SNIFF_BYTES) {
        head.push(chunk.subarray(0, SNIFF_BYTES - headBytes));
        headBytes += Math.min(chunk.length, SNIFF_BYTES - headBytes);
      }
      done(null, chunk);
    },
  });
  const file = (options.openFile ?? openTemporary)(temp);
  // Which stream failed first: the file's failure is the disk's, not the network's (the
  // pipeline then destroys the others with the same error, so the error alone cannot tell).
  let diskFailed: boolean | undefined;
  file.once('error', () => {
    diskFailed ??= true;
  });
  for (const source of [body, meter])
    source.once('error', () => {
      diskFailed ??= false;
    });
  try {
    await pipeline(body, meter, file, { signal });
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw diskFailed ? diskFailure(error, 'write a download') : error;
  }
  try {
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw diskFailure(error, 'name a download');
  }
  return { bytes, sha256: sha.digest('hex'), head: Buffer.concat(head), ...(declaredType ? { declaredType } : {}) };
}

/** One failure for whatever an attempt threw; an abort reports its reason (deadline, shutdown). */
function failureOf(error: unknown, signal: AbortSignal): MediaError {
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    return reason instanceof MediaError ? reason : new MediaError('aborted', 'download aborted', false);
  }
  if (error instanceof MediaError) return error;
  const cause = (error as { cause?: unknown }).cause;
  const blocked =
    error instanceof BlockedAddressError ? error : cause instanceof BlockedAddressError ? cause : undefined;
  if (blocked) return new MediaError('blocked', blocked.message, false);
  const code = (error as { code?: string }).code ?? '';
  if (code.startsWith('UND_ERR_') && code.includes('TIMEOUT')) return new MediaError('timeout', 'server stalled', true);
  return new MediaError('network', (error as Error).message, true);
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}
