import type { IncomingMessage } from 'node:http';
import { defaults } from '../config/schema.js';
import { counted, RequestError } from '../core/errors.js';

/**
 * Read the request body as raw bytes, refusing (413) anything over `limit` rather than
 * truncating it: a truncated body can neither verify nor parse, and must not half-succeed.
 *
 * Read with plain `data`/`end` listeners: `for await` over the request builds an async
 * iterator, a finished-stream watcher and a promise per chunk, about 4 KB of garbage per
 * webhook, on the hot path.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(limit));
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0)); // read before (a body parser mounted ahead)
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (error: Error | undefined): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (error) reject(error);
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    function onData(chunk: Buffer): void {
      size += chunk.length;
      if (size > limit) {
        settle(tooLarge(limit));
        // The rest is read and dropped while the 413 goes out (its `Connection: close` ends the
        // socket); the slow-client guard cuts a body that never ends.
        req.resume();
        return;
      }
      chunks.push(chunk);
    }
    function onEnd(): void {
      settle(req.complete ? undefined : clientClosed(size));
    }
    function onError(error: Error): void {
      settle(isClientGone(error) ? clientClosed(size, error) : error);
    }
    function onClose(): void {
      // Closed before its end: the client hung up mid-body.
      settle(clientClosed(size));
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Node reports a client that hung up mid-body as `ECONNRESET` / "aborted" on the request. */
function isClientGone(error: unknown): boolean {
  const { code, message } = error as NodeJS.ErrnoException;
  return code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || message === 'aborted';
}

/**
 * The client went away before its body ended: nobody is left to answer, and nothing was
 * wrong with the service or the (unread) delivery. 499 is nginx's "client closed request".
 */
function clientClosed(received: number, cause?: unknown): RequestError {
  return new RequestError(
    'client_closed',
    499,
    `The client closed the connection after ${counted(received, 'byte')}, before the body ended`,
    { stage: 'body', ...(cause === undefined ? {} : { cause }) },
  );
}

export function tooLarge(limit: number): RequestError {
  return new RequestError('body_too_large', 413, `Request body is larger than server.bodyLimitBytes (${limit} bytes)`);
}

/** `application/json`, or any `+json` type, with or without parameters. */
export function isJsonType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  if (contentType === 'application/json') return true;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

const forbiddenKeys = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Parse untrusted JSON: nesting deeper than `maxDepth`, more than `maxKeys` object keys plus
 * array items, and prototype-polluting keys are a 400. Depth and size are checked on the bytes
 * first (scanJson), so a hostile body is refused before JSON.parse spends time building it;
 * the parsed value is then walked once for forbidden keys. The walk recurses, but never deeper
 * than `maxDepth + 1`.
 */
export function parseJson(raw: Buffer, maxDepth: number, maxKeys: number = defaults.server.maxKeys): unknown {
  scanJson(raw, maxDepth, maxKeys);
  const text = raw.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new RequestError('bad_json', 400, `Body is not valid JSON: ${(error as Error).message}`);
  }
  if (mayHoldForbiddenKey(text)) check(value, maxDepth);
  return value;
}

/**
 * Whether the walk for forbidden keys is needed: a key can only be one of them if it is spelled
 * out in the body, or if the body spells a string with `\u` escapes. Most bodies have neither,
 * and a search is far cheaper than walking every parsed value. The search runs on the decoded
 * text (ASCII decodes to itself, and nothing else decodes to ASCII): a search in the Buffer is
 * a call into C++ that first asks V8 for the Buffer's memory, four times per webhook.
 */
function mayHoldForbiddenKey(text: string): boolean {
  if (text.includes('\\u')) return true;
  for (const key of forbiddenKeys) if (text.includes(key)) return true;
  return false;
}

function check(node: unknown, maxDepth: number, depth = 1): void {
  // Recursion is bounded: it stops at maxDepth + 1 whatever the body's real depth.
  if (typeof node !== 'object' || node === null) return;
  if (depth > maxDepth) throw tooDeep(maxDepth);
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) check(node[i], maxDepth, depth + 1);
    return;
  }
  for (const key in node) {
    if (forbiddenKeys.has(key))
      throw new RequestError('forbidden_key', 400, `JSON body contains the key "${key}", which is not accepted`);
    check((node as Record<string, unknown>)[key], maxDepth, depth + 1);
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

/**
 * One pass over the bytes, before parsing: nesting depth and the number of object keys plus
 * array items ("structures"), with string contents skipped (brackets and commas inside strings,
 * and escaped quotes, count for nothing). Items are counted as the commas of every container
 * plus one per non-empty container. UTF-8 continuation bytes are never ASCII, so a byte scan
 * cannot mistake part of a character for a bracket. Malformed JSON is left for JSON.parse to
 * name, unless it already breaks a limit.
 */
export function scanJson(raw: Buffer, maxDepth: number, maxKeys: number): void {
  let depth = 0;
  let items = 0;
  let opened = false;
  const end = raw.length;
  for (let i = 0; i < end; i++) {
    const byte = raw[i] as number;
    if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
    if (opened) {
      opened = false;
      // The first thing inside a container that is not its end: the container is non-empty.
      if (byte !== 0x7d && byte !== 0x5d && ++items > maxKeys) throw tooManyKeys(maxKeys);
    }
    if (byte === QUOTE) {
      i = stringEnd(raw, i);
    } else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > maxDepth) throw tooDeep(maxDepth);
      opened = true;
    } else if (byte === 0x7d || byte === 0x5d) {
      depth--;
    } else if (byte === COMMA) {
      if (++items > maxKeys) throw tooManyKeys(maxKeys);
    }
  }
}

/** Index of the quote closing the string opened at `start` (or the last index when unterminated). */
function stringEnd(raw: Buffer, start: number): number {
  let at = start;
  for (;;) {
    at = raw.indexOf(QUOTE, at + 1);
    if (at === -1) return raw.length - 1;
    let backslashes = 0;
    while (raw[at - 1 - backslashes] === BACKSLASH) backslashes++;
    // An even run of backslashes escapes itself, not the quote.
    if (backslashes % 2 === 0) return at;
  }
}

function tooDeep(maxDepth: number): RequestError {
  return new RequestError(
    'too_deep',
    400,
    `JSON body nests deeper than ${counted(maxDepth, 'level')} (server.maxDepth)`,
  );
}

function tooManyKeys(maxKeys: number): RequestError {
  return new RequestError(
    'too_many_keys',
    400,
    `JSON body holds more than ${maxKeys} object keys and array items (server.maxKeys)`,
  );
}
