import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { seeded } from '../adapters/fuzz.js';
import { parseJson, readRawBody, scanJson } from '../../src/http/body.js';
import { RequestError } from '../../src/core/errors.js';

/** Object keys plus array items, counted on the parsed value. */
function structures(value: unknown): number {
  if (Array.isArray(value)) return value.length + value.reduce((n: number, item) => n + structures(item), 0);
  if (typeof value === 'object' && value !== null)
    return Object.values(value).reduce((n: number, item) => n + 1 + structures(item), 0);
  return 0;
}

function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  const children = Object.values(value);
  return 1 + (children.length ? Math.max(...children.map(depthOf)) : 0);
}

const tricky = [
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  '"',
  '\\',
  '\\"',
  '\\\\',
  '"]',
  '\\\\"',
  '{"a":[1,2]}',
  'é',
  '漢字',
  '\u2028',
  '\n',
  ' ',
];

function value(next: () => number, depth: number): unknown {
  const pick = next();
  if (depth > 5 || pick < 0.35) {
    if (pick < 0.15)
      return Array.from({ length: Math.floor(next() * 4) }, () => tricky[Math.floor(next() * tricky.length)]).join('');
    if (pick < 0.25) return Math.floor(next() * 1000) - 500;
    return [null, true, false, 0.5][Math.floor(next() * 4)];
  }
  const size = Math.floor(next() * 5);
  if (pick < 0.65) return Array.from({ length: size }, () => value(next, depth + 1));
  const object: Record<string, unknown> = {};
  for (let i = 0; i < size; i++) object[`k${i}${tricky[Math.floor(next() * tricky.length)]}`] = value(next, depth + 1);
  return object;
}

const refused = (run: () => unknown): RequestError | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof RequestError) return error;
    throw error;
  }
};

describe('scanJson: depth and size before parsing', () => {
  afterEach(() => vi.restoreAllMocks());

  it('counts exactly what the parsed value holds, whatever the strings contain', () => {
    const next = seeded(20240601);
    for (let round = 0; round < 500; round++) {
      const input = { wrap: value(next, 0) };
      const text = next() < 0.5 ? JSON.stringify(input) : JSON.stringify(input, null, 2);
      const raw = Buffer.from(text);
      const count = structures(input);
      const depth = depthOf(input);
      expect(
        refused(() => scanJson(raw, depth, count)),
        text,
      ).toBeUndefined();
      expect(refused(() => scanJson(raw, depth, count - 1))?.code, text).toBe('too_many_keys');
      expect(refused(() => scanJson(raw, depth - 1, count))?.code, text).toBe('too_deep');
    }
  });

  it('ignores brackets, commas and escaped quotes inside strings', () => {
    const raw = Buffer.from(String.raw`{"a":"[[[{{,,,\"]]]","b\\":"\\","c":["\"[",",{"]}`);
    expect(JSON.parse(raw.toString())).toEqual({ a: '[[[{{,,,"]]]', 'b\\': '\\', c: ['"[', ',{'] });
    expect(refused(() => scanJson(raw, 2, 5))).toBeUndefined();
    expect(refused(() => scanJson(raw, 2, 4))?.code).toBe('too_many_keys');
    expect(refused(() => scanJson(raw, 1, 5))?.code).toBe('too_deep');
  });

  it('refuses a 1 MB deeply nested body without handing it to JSON.parse', () => {
    const parse = vi.spyOn(JSON, 'parse');
    const raw = Buffer.from('['.repeat(500_000) + ']'.repeat(500_000));
    const error = refused(() => parseJson(raw, 64, 10_000));
    expect(error).toMatchObject({ code: 'too_deep', status: 400 });
    expect(error?.message).toMatch(/deeper than 64 levels \(server\.maxDepth\)/);
    expect(parse).not.toHaveBeenCalled();
  });

  it('refuses a body of 10^5 keys without handing it to JSON.parse', () => {
    const parse = vi.spyOn(JSON, 'parse');
    const raw = Buffer.from(
      JSON.stringify(Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]))),
    );
    const error = refused(() => parseJson(raw, 64));
    expect(error).toMatchObject({ code: 'too_many_keys', status: 400 });
    expect(error?.message).toMatch(/more than 10000 object keys and array items \(server\.maxKeys\)/);
    expect(parse).not.toHaveBeenCalled();
    expect(refused(() => parseJson(Buffer.from(`[${'0,'.repeat(20_000)}0]`), 64))?.code).toBe('too_many_keys');
  });

  it('still parses ordinary bodies, and still names malformed JSON as bad_json', () => {
    expect(parseJson(Buffer.from('{"sessionKey":"cli:a","content":"[hi], {there}"}'), 64)).toEqual({
      sessionKey: 'cli:a',
      content: '[hi], {there}',
    });
    expect(parseJson(Buffer.from('[]'), 64)).toEqual([]);
    expect(refused(() => parseJson(Buffer.from('{"a":'), 64))?.code).toBe('bad_json');
    expect(refused(() => parseJson(Buffer.from('"unterminated'), 64))?.code).toBe('bad_json');
  });
});

describe('parseJson: prototype-polluting keys', () => {
  it('refuses them as written, nested, and spelled with \\u escapes; lets their words pass as values', () => {
    const code = (text: string) => refused(() => parseJson(Buffer.from(text), 64))?.code;
    expect(code('{"__proto__":{"x":1}}')).toBe('forbidden_key');
    expect(code('{"a":[{"b":{"constructor":1}}]}')).toBe('forbidden_key');
    expect(code('{"prototype":1}')).toBe('forbidden_key');
    // The byte search cannot see these; the walk runs whenever a \u escape is present.
    expect(code('{"\\u005f\\u005fproto\\u005f\\u005f":{"x":1}}')).toBe('forbidden_key');
    expect(code('{"a":{"constr\\u0075ctor":1}}')).toBe('forbidden_key');
    expect(parseJson(Buffer.from('{"content":"the constructor of a prototype is not __proto__"}'), 64)).toEqual({
      content: 'the constructor of a prototype is not __proto__',
    });
    expect(parseJson(Buffer.from('{"content":"caf\\u00e9"}'), 64)).toEqual({ content: 'café' });
  });
});

describe('regression: readRawBody when the client hangs up', () => {
  it('throws client_closed (499), not a raw socket error, when the body stops halfway', async () => {
    const outcome = new Promise<unknown>((resolve) => {
      let client: ReturnType<typeof connect> | undefined;
      const server = createServer((req: IncomingMessage) => {
        readRawBody(req, 1024 * 1024)
          .then(resolve, resolve)
          .finally(() => server.close());
        // The first part of the body is in; the client hangs up before the rest.
        req.once('data', () => client?.destroy());
      });
      server.listen(0, '127.0.0.1', () => {
        client = connect((server.address() as AddressInfo).port, '127.0.0.1', () => {
          client?.write(
            'POST /webhooks/generic HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"sessionKey":',
          );
        });
        client.on('error', () => undefined);
      });
    });
    const error = await outcome;
    expect(error).toMatchObject({ name: 'RequestError', code: 'client_closed', status: 499 });
    expect((error as Error).message).toMatch(/closed the connection after 14 bytes/);
  });

  it('still reads a whole body', async () => {
    const server = createServer((req, res) => {
      readRawBody(req, 100).then(
        (body) => res.end(`got ${body.length}`),
        (error: Error) => res.end(error.message),
      );
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, {
      method: 'POST',
      body: '{"a":1}',
    });
    expect(await response.text()).toBe('got 7');
    server.close();
  });
});
