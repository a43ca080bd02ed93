import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { adapters, createAdapter } from '../../src/adapters/index.js';
import { defineAdapter } from '../../src/adapters/kit/descriptor.js';
import { eventBuilder } from '../../src/adapters/kit/event.js';
import { optionalText } from '../../src/adapters/kit/settings.js';
import { checkSignature, headerOf, shapeError, verifiedSecret } from '../../src/adapters/kit/types.js';
import { loadConfig } from '../../src/service/configure.js';
import type { AdapterFixtures } from '../fixtures/adapters.js';
import { adapterFixtures } from '../fixtures/adapters.js';
import { adapterOf, adapterSuite, delivery, fixturesOf } from './suite.js';

/** A made-up platform: `{"from": "...", "say": "...", "at": <seconds>}`, signed by an `X-Parrot-Key` header. */
const parrot = defineAdapter({
  name: 'parrot',
  namespace: 'parrot',
  secret: { setting: 'key', required: true },
  settings: z.strictObject({ key: optionalText(), roomName: optionalText() }),
  retryHorizonMs: 60_000,
  create(channel, settings) {
    const key = verifiedSecret(channel, settings.key);
    const buildEvent = eventBuilder({
      channel: channel.id,
      adapter: 'parrot',
      namespace: channel.namespace,
      idPrefix: 'parrot',
    });
    return {
      name: 'parrot',
      channel: channel.id,
      namespace: channel.namespace,
      verify(raw) {
        if (key) checkSignature(channel, 'X-Parrot-Key', headerOf(raw, 'x-parrot-key'), key);
      },
      normalize(body, raw) {
        const { from, say, at } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
        if (typeof from !== 'string' || from === '' || typeof say !== 'string')
          throw shapeError(channel, 'a parrot squawk', 'needs from and say strings');
        const timestamp =
          typeof at === 'number' && Number.isInteger(at) && at >= 0 && at < 32_503_680_000
            ? at
            : Math.floor(raw.now / 1000);
        return {
          events: [
            buildEvent({
              kind: 'message',
              detail: 'private',
              conversation: { type: 'private', id: from },
              sender: { id: from },
              text: say,
              timestamp,
              raw: body,
            }),
          ],
        };
      },
    };
  },
});

const parrotFixtures: AdapterFixtures = {
  settings: { roomName: 'perch' },
  samples: () => [
    { from: 'polly', say: 'hello', at: 1_718_000_000 },
    { from: 'kea', say: 'hi there' },
  ],
};
const registry = [...adapters, parrot];
const fixtures = new Map([...adapterFixtures, ['parrot', parrotFixtures]]);

describe('an adapter registered from its descriptor alone', () => {
  // The same shared tests the built-in adapters get: misspelt settings, the secret rule,
  // sample shapes and fuzzing, with no other file touched.
  adapterSuite(parrot, registry, fixtures);

  it('is a channel kind of that registry only', () => {
    expect(() => loadConfig({ env: {}, file: { channels: [{ id: 'p', adapter: 'parrot', key: 'k' }] } })).toThrow(
      /channels\[0\]\.adapter \(channel "p"\): must be one of/,
    );
    const [channel] = loadConfig({
      env: {},
      adapters: registry,
      file: { channels: [{ id: 'p', adapter: 'parrot', key: 'k' }] },
    }).channels;
    expect(channel!.settings).toEqual({ key: 'k', roomName: undefined });
    const adapter = createAdapter(channel!, registry);
    expect(adapter.normalize({ from: 'polly', say: 'hello', at: 5 }, delivery).events[0]).toMatchObject({
      id: expect.stringMatching(/^parrot_/),
      channel: 'p',
      adapter: 'parrot',
      namespace: 'parrot',
      sessionKey: 'parrot:polly',
      segments: [{ type: 'text', data: { text: 'hello' } }],
      media: [],
      mentions: [],
      timestamp: 5,
    });
    expect(() => adapter.verify({ ...delivery, headers: { 'x-parrot-key': 'nope' } })).toThrow(
      /Signature mismatch on channel "p": X-Parrot-Key/,
    );
  });

  it('fails the shared tests when it has no fixtures, saying where to add them', () => {
    expect(() => fixturesOf(parrot)).toThrow(
      'adapter "parrot" has no fixtures: add an entry to test/fixtures/adapters.ts',
    );
  });

  it('holds a hand-made channel to the same settings rules', () => {
    const [channel] = loadConfig({
      env: {},
      adapters: registry,
      file: { channels: [{ id: 'p', adapter: 'parrot', key: 'k' }] },
    }).channels;
    expect(() => createAdapter({ ...channel!, settings: { key: 'k', perch: 1 } }, registry)).toThrow(
      'channels[0].perch (channel "p"): unknown setting; the parrot adapter takes key, roomName',
    );
    expect(() => createAdapter({ ...channel!, settings: {} }, registry)).toThrow(
      'channels[0].key (channel "p"): is required',
    );
    expect(adapterOf(parrot, registry, parrotFixtures).namespace).toBe('parrot');
  });
});
