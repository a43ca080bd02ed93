import type { IncomingMessage } from 'node:http';
import { RequestError } from '../errors.js';

/**
 * Read the request body as raw bytes, refusing (413) anything over `limit` rather than
 * truncating it: a truncated body can neither verify nor parse, and must not half-succeed.
 */
export async function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}

function tooLarge(limit: number): RequestError {
  return new RequestError('body_too_large', 413, `Request body is larger than server.bodyLimitBytes (${limit} bytes)`);
}

/** `application/json`, or any `+json` type, with or without parameters. */
export function isJsonType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

const forbiddenKeys = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Parse untrusted JSON: nesting deeper than `maxDepth` and prototype-polluting keys are a 400.
 * Depth is measured on the text before parsing, so an absurdly deep body costs one linear scan.
 */
export function parseJson(raw: Buffer, maxDepth: number): unknown {
  const text = raw.toString('utf8');
  const depth = nestingDepth(text, maxDepth);
  if (depth > maxDepth) throw new RequestError('too_deep', 400, `JSON body nests deeper than ${maxDepth} levels`);
  const risky = text.includes('__proto__') || text.includes('constructor') || text.includes('prototype');
  try {
    return risky ? JSON.parse(text, rejectForbiddenKeys) : JSON.parse(text);
  } catch (error) {
    if (error instanceof RequestError) throw error;
    throw new RequestError('bad_json', 400, `Body is not valid JSON: ${(error as Error).message}`);
  }
}

function rejectForbiddenKeys(this: unknown, key: string, value: unknown): unknown {
  if (forbiddenKeys.has(key)) throw new RequestError('forbidden_key', 400, `JSON body contains the key "${key}", which is not accepted`);
  return value;
}

/** Deepest nesting of objects and arrays, stopping early once past `stopAt`. */
function nestingDepth(text: string, stopAt: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stopAt) return deepest;
      }
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return deepest;
}
