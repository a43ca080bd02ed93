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
 * V8's JSON.parse is iterative, so a deep body cannot overflow the stack there; the parsed value
 * is then walked once to enforce depth and keys (cheaper than a reviver). The walk recurses, but
 * never deeper than `maxDepth + 1`.
 */
export function parseJson(raw: Buffer, maxDepth: number): unknown {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw new RequestError('bad_json', 400, `Body is not valid JSON: ${(error as Error).message}`);
  }
  check(value, maxDepth);
  return value;
}

function check(node: unknown, maxDepth: number, depth = 1): void {
  // Recursion is bounded: it stops at maxDepth + 1 whatever the body's real depth.
  if (typeof node !== 'object' || node === null) return;
  if (depth > maxDepth) throw new RequestError('too_deep', 400, `JSON body nests deeper than ${maxDepth} levels`);
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) check(node[i], maxDepth, depth + 1);
    return;
  }
  for (const key in node) {
    if (forbiddenKeys.has(key)) throw new RequestError('forbidden_key', 400, `JSON body contains the key "${key}", which is not accepted`);
    check((node as Record<string, unknown>)[key], maxDepth, depth + 1);
  }
}
