import { describe, expect, it } from 'vitest';
import { genericMessagesOf, zodAcceptsGenericBody } from '../../src/adapters/generic/message.js';
import { createAdapter } from '../../src/adapters/index.js';
import type { RawDelivery } from '../../src/adapters/kit/types.js';
import { loadConfig } from '../../src/service/configure.js';
import { genericSamples, replacements, variants } from './fuzz.js';

const adapter = createAdapter(loadConfig({ env: {}, file: {} }).channels[0]!);
const delivery: RawDelivery = {
  headers: {},
  body: Buffer.alloc(0),
  query: new URLSearchParams(),
  now: 1_718_000_000_000,
};
const refusal = (body: unknown): string => {
  try {
    adapter.normalize(body, delivery);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
};

describe("the generic channel's hot-path check", () => {
  it('accepts and refuses exactly what the zod schema does', () => {
    const edges = [
      'x'.repeat(512),
      'x'.repeat(513),
      'x'.repeat(256),
      'x'.repeat(257),
      ' ',
      '\n',
      2 ** 53 - 1,
      2 ** 53,
      1.5,
      -0,
      32_503_679_999.5,
      32_503_680_000,
      'private',
      'group',
      'other',
      Array.from({ length: 32 }, () => ({ url: 'u' })),
      Array.from({ length: 33 }, () => ({ url: 'u' })),
    ];
    const bodies = [
      ...genericSamples,
      ...variants(genericSamples, 3000, 42),
      ...variants(
        genericSamples.map((s) => ({ wrap: s })),
        300,
        7,
      ).map((v) => (v as { wrap?: unknown } | null)?.wrap),
      [],
      Array.from({ length: 100 }, () => ({ sessionKey: 'a', content: 'b' })),
      Array.from({ length: 101 }, () => ({ sessionKey: 'a', content: 'b' })),
      ...replacements.map((make) => make()),
    ];
    // Boundary values in every field of the first sample.
    for (const key of [
      'id',
      'sessionKey',
      'content',
      'mediaUrl',
      'mimeType',
      'timestamp',
      'media',
      'sender',
      'conversation',
    ]) {
      for (const value of edges) bodies.push({ ...(genericSamples[1] as object), [key]: value });
    }
    for (const value of edges)
      bodies.push({
        sessionKey: 'a',
        content: 'b',
        sender: { id: value, name: value },
        conversation: { type: value, id: value },
      });
    let accepted = 0;
    for (const body of bodies) {
      const hand = genericMessagesOf(body) !== undefined;
      expect(hand, JSON.stringify(body)).toBe(zodAcceptsGenericBody(body));
      if (hand) accepted++;
    }
    expect(accepted).toBeGreaterThan(50);
    expect(accepted).toBeLessThan(bodies.length - 50);
  });
});

describe('a refused generic body', () => {
  it('names the field and what is allowed', () => {
    expect(refusal({ content: 'hi' })).toBe(
      'Body of channel "generic" is not a generic message: sessionKey is required (a non-empty string of at most 512 characters)',
    );
    expect(refusal({ sessionKey: 'cli:a', content: 5 })).toBe(
      'Body of channel "generic" is not a generic message: content must be a string of at most 65536 characters, got the number 5',
    );
    expect(refusal([{ sessionKey: 'cli:a', content: 'hi', sender: 'bob' }])).toBe(
      'Body of channel "generic" is not a generic message: [0].sender must be an object {id, name?}, got a string of 3 characters',
    );
    expect(refusal({ sessionKey: 'cli:a', content: 'hi', sender: {} })).toMatch(
      /: sender\.id is required \(a non-empty string of at most 256 characters, or a whole number\)$/,
    );
    expect(refusal({ sessionKey: 'cli:a', content: '  ' })).toMatch(
      /: the message needs one of content \(not blank\), mediaUrl or media$/,
    );
    expect(
      refusal([
        { sessionKey: 'a', content: 'b' },
        { sessionKey: 'a', media: [{ url: 7 }] },
      ]),
    ).toMatch(/: \[1\]\.media\[0\]\.url must be a URL string, got the number 7$/);
    expect(refusal({ sessionKey: 'a', content: 'b', conversation: { type: 'channel', id: 'c' } })).toMatch(
      /: conversation\.type must be "private" or "group", got a string of 7 characters$/,
    );
    expect(refusal([])).toMatch(/: the body must be 1 to 100 messages, got an empty array$/);
    expect(refusal('hello')).toMatch(
      /: the body must be one message object or an array of 1 to 100 of them, got a string of 5 characters$/,
    );
    expect(refusal(null)).toMatch(/got null$/);
  });

  it('counts what came instead in the singular when there is one', () => {
    expect(refusal({ sessionKey: 'cli:a', content: 'hi', sender: 'b' })).toMatch(
      /: sender must be an object \{id, name\?\}, got a string of 1 character$/,
    );
    expect(refusal({ sessionKey: 'cli:a', content: 'hi', sender: ['bob'] })).toMatch(
      /: sender must be an object \{id, name\?\}, got an array of 1 item$/,
    );
  });

  it('refuses absurd timestamps, naming the field; seconds pass as they are', () => {
    expect(refusal({ sessionKey: 'a', content: 'b', timestamp: -1 })).toMatch(
      /: timestamp must be seconds since 1970, not negative, got the number -1$/,
    );
    expect(refusal({ sessionKey: 'a', content: 'b', timestamp: 1710234567000 })).toMatch(
      /: timestamp must be seconds since 1970 before the year 3000, got the number 1710234567000 \(milliseconds where seconds belong\?\)$/,
    );
    expect(refusal({ sessionKey: 'a', content: 'b', timestamp: Number.POSITIVE_INFINITY })).toMatch(
      /: timestamp must be seconds since 1970 \(a number below 32503680000, the year 3000\), got a non-finite number$/,
    );
    expect(refusal({ sessionKey: 'a', content: 'b', timestamp: '1710234567' })).toMatch(/: timestamp must be seconds/);
    expect(
      adapter.normalize({ sessionKey: 'a', content: 'b', timestamp: 1710234567.9 }, delivery).events[0]!.timestamp,
    ).toBe(1710234567);
    expect(adapter.normalize({ sessionKey: 'a', content: 'b' }, delivery).events[0]!.timestamp).toBe(1718000000);
  });
});
