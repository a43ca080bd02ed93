import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pRetry, { AbortError } from 'p-retry';
import { sleep } from '../clock.js';
import { Agent, request, type Dispatcher } from 'undici';
import { BlockedAddressError, checkUrl, guardedLookup, type UrlPolicy } from './guard.js';
import { MediaError } from './errors.js';
import { TEMP_SUFFIX } from './sandbox.js';

export { MediaError, isMediaError, type FailureKind } from './errors.js';

const MAX_REDIRECTS = 3;
const SNIFF_BYTES = 4100;

export interface FetchOptions extends UrlPolicy {
  maxBytes: number;
  /** Budget of the whole download, every attempt and wait included. */
  timeoutMs: number;
  retries: number;
  /** Headers for the first origin only (platform auth); dropped across origins. */
  headers?: Record<string, string>;
  /** Abort from outside (shutdown). */
  signal?: AbortSignal;
  /** First retry delay (doubles per retry). @default 250 */
  minBackoffMs?: number;
  /** Dispatcher for non-exempt hosts; must check addresses at connect time. @default the guarded agent */
  dispatcher?: Dispatcher;
}

export interface Fetched {
  bytes: number;
  sha256: string;
  /** The first bytes, for type sniffing. */
  head: Buffer;
  /** Content-Type the server declared. */
  declaredType?: string;
}

/** An agent whose every connection resolves through `lookup` (a guarded one). */
export function guardedAgent(lookup: typeof guardedLookup = guardedLookup): Agent {
  return new Agent({ connect: { lookup: lookup as never }, keepAliveTimeout: 4_000 });
}

/** Dispatchers: guarded (connect-time address check) and exempt (media.allowHosts only). */
const guarded = guardedAgent();
const exempt = new Agent({ keepAliveTimeout: 4_000 });

/**
 * Stream `url` into `target` with the guard, the byte cap, timeouts and retries. The body goes
 * to `target + .part` and is renamed into place only when complete; nothing is left on failure.
 */
export async function fetchToFile(url: string, target: string, options: FetchOptions): Promise<Fetched> {
  const total = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([total, options.signal]) : total;
  try {
    return await pRetry(() => attempt(url, target, options, signal), {
      retries: options.retries,
      minTimeout: options.minBackoffMs ?? 250,
      factor: 2,
      randomize: true,
      signal,
      shouldRetry: ({ error }) => error instanceof MediaError && error.retryable,
      onFailedAttempt: async ({ error }) => {
        const wait = error instanceof MediaError ? error.retryAfterMs : undefined;
        if (wait && wait > 0) await sleep(wait, signal);
      },
    });
  } catch (error) {
    if (error instanceof MediaError) throw error;
    if (total.aborted) throw new MediaError('timeout', `no complete download within ${options.timeoutMs} ms`, false);
    if (signal.aborted) throw new MediaError('network', 'download aborted', false);
    throw new MediaError('network', (error as Error).message, false);
  }
}

async function attempt(first: string, target: string, options: FetchOptions, signal: AbortSignal): Promise<Fetched> {
  let current = first;
  let headers = options.headers ?? {};
  const origin = originOf(first);
  for (let hop = 0; ; hop++) {
    const checked = checkUrl(current, options);
    if ('refusal' in checked) throw new AbortError(new MediaError(hop === 0 && checked.refusal === 'not a valid URL' ? 'bad_url' : 'blocked', checked.refusal, false));
    let response: Dispatcher.ResponseData;
    try {
      response = await request(checked.url, {
        method: 'GET', headers: { 'user-agent': 'agent-intake', ...headers }, signal,
        dispatcher: checked.exempt ? exempt : options.dispatcher ?? guarded, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs,
      });
    } catch (error) {
      throw classify(error, signal);
    }
    const { statusCode } = response;
    if (statusCode >= 300 && statusCode < 400 && response.headers.location) {
      response.body.resume();
      if (hop >= MAX_REDIRECTS) throw new AbortError(new MediaError('http', `more than ${MAX_REDIRECTS} redirects`, false));
      current = new URL(String(response.headers.location), checked.url).toString();
      // Platform credentials go to the platform's origin only.
      if (originOf(current) !== origin) headers = {};
      continue;
    }
    if (statusCode !== 200) {
      response.body.resume();
      const retryable = statusCode >= 500 || statusCode === 429 || statusCode === 408;
      const error = new MediaError('http', `HTTP ${statusCode}`, retryable, retryAfterMs(response.headers['retry-after']));
      throw retryable ? error : new AbortError(error);
    }
    const declared = Number(response.headers['content-length']);
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      response.body.destroy();
      throw new AbortError(new MediaError('too_large', `declared ${declared} bytes, over media.maxBytes (${options.maxBytes})`, false));
    }
    const type = response.headers['content-type'];
    return stream(response.body, target, options.maxBytes, signal, typeof type === 'string' ? type : undefined);
  }
}

async function stream(body: NodeJS.ReadableStream, target: string, maxBytes: number, signal: AbortSignal, declaredType?: string): Promise<Fetched> {
  const temp = target + TEMP_SUFFIX;
  const sha = createHash('sha256');
  const head: Buffer[] = [];
  let headBytes = 0;
  let bytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(new MediaError('too_large', `body passed media.maxBytes (${maxBytes}) while streaming`, false));
      sha.update(chunk);
      if (headBytes < SNIFF_BYTES) {
        head.push(chunk.subarray(0, SNIFF_BYTES - headBytes));
        headBytes += Math.min(chunk.length, SNIFF_BYTES - headBytes);
      }
      done(null, chunk);
    },
  });
  try {
    await pipeline(body, meter, createWriteStream(temp, { flags: 'wx', mode: 0o600 }), { signal });
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    if (error instanceof MediaError) throw new AbortError(error);
    throw classify(error, signal);
  }
  return { bytes, sha256: sha.digest('hex'), head: Buffer.concat(head), ...(declaredType ? { declaredType } : {}) };
}

function classify(error: unknown, signal: AbortSignal): Error {
  if (error instanceof AbortError) return error;
  const cause = (error as { cause?: unknown }).cause;
  if (error instanceof BlockedAddressError || cause instanceof BlockedAddressError) {
    return new AbortError(new MediaError('blocked', (cause instanceof BlockedAddressError ? cause : error as Error).message, false));
  }
  if (signal.aborted) return new AbortError(new MediaError('timeout', 'download timed out', false));
  const code = (error as { code?: string }).code ?? '';
  if (code.startsWith('UND_ERR_') && code.includes('TIMEOUT')) return new MediaError('timeout', 'server stalled', true);
  return new MediaError('network', (error as Error).message, true);
}

function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.min(seconds * 1000, 60_000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.min(at - Date.now(), 60_000)) : undefined;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

