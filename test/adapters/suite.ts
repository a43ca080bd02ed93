import { expect, it } from 'vitest';
import { adapters as builtIns, createAdapter, type Adapter, type AdapterDescriptor } from '../../src/adapters/index.js';
import type { RawDelivery } from '../../src/adapters/kit/types.js';
import { loadConfig } from '../../src/service/configure.js';
import type { InboundEvent } from '../../src/events/inbound.js';
import { RequestError } from '../../src/core/errors.js';
import { adapterFixtures, type AdapterFixtures } from '../fixtures/adapters.js';
import { variants } from './fuzz.js';

/**
 * The tests every adapter gets from its descriptor and fixtures alone: config validation,
 * shapes of its samples, fuzzing. Each takes the registry as a parameter, so a test can run
 * them for an adapter of its own.
 */

export const NOW = 1_718_000_000_000;
export const delivery: RawDelivery = { headers: {}, body: Buffer.alloc(0), query: new URLSearchParams(), now: NOW };

/** A descriptor's fixtures, or the failure that says where to add them. */
export function fixturesOf(
  descriptor: AdapterDescriptor,
  fixtures: ReadonlyMap<string, AdapterFixtures> = adapterFixtures,
): AdapterFixtures {
  const found = fixtures.get(descriptor.name);
  if (!found)
    throw new Error(
      `adapter "${descriptor.name}" has no fixtures: add an entry to test/fixtures/adapters.ts (settings and sample bodies)`,
    );
  return found;
}

/** The channel entry of a working channel `ch`, its secret set when it has one. */
export function channelEntry(
  descriptor: AdapterDescriptor,
  fixtures: AdapterFixtures,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: 'ch',
    adapter: descriptor.name,
    ...fixtures.settings,
    ...(descriptor.secret ? { [descriptor.secret.setting]: 'fixture-secret' } : {}),
    ...extra,
  };
}

/** The adapter of a working channel `ch`, through loadConfig and createAdapter as at start. */
export function adapterOf(
  descriptor: AdapterDescriptor,
  registry: readonly AdapterDescriptor[],
  fixtures: AdapterFixtures,
  extra: Record<string, unknown> = {},
): Adapter {
  const [channel] = loadConfig({
    env: {},
    adapters: registry,
    file: { channels: [channelEntry(descriptor, fixtures, extra)] },
  }).channels;
  return createAdapter(channel!, registry);
}

/** What every event of every adapter holds, whatever the body. */
export function expectSaneEvent(event: InboundEvent, descriptor: AdapterDescriptor, where: string): void {
  expect(event.channel, where).toBe('ch');
  expect(event.adapter, where).toBe(descriptor.name);
  expect(event.namespace, where).toBe(descriptor.namespace ?? 'ch');
  expect(['message', 'notice', 'request'], where).toContain(event.kind);
  expect(Number.isInteger(event.timestamp) && event.timestamp >= 0 && event.timestamp < 32_503_680_000, where).toBe(
    true,
  );
  for (const text of [
    event.id,
    event.sessionKey,
    event.sender.id,
    event.text,
    event.conversation.id,
    ...(event.platformId === undefined ? [] : [event.platformId]),
  ]) {
    expect(typeof text, where).toBe('string');
    expect(text, where).not.toMatch(/\[object Object\]|^function |native code/);
  }
  for (const list of [event.segments, event.media, event.mentions]) expect(Array.isArray(list), where).toBe(true);
  for (const ref of event.media) expect(typeof (ref.url ?? ref.ref), where).toBe('string');
}

/** Registers the shared tests of each descriptor of `registry` (inside a describe). */
export function adapterSuite(
  descriptor: AdapterDescriptor,
  registry: readonly AdapterDescriptor[] = builtIns,
  fixtures: ReadonlyMap<string, AdapterFixtures> = adapterFixtures,
): void {
  it('has fixtures', () => {
    expect(() => fixturesOf(descriptor, fixtures)).not.toThrow();
  });

  it('refuses a misspelt setting at start, naming it and the settings it takes', () => {
    const valid = channelEntry(descriptor, fixturesOf(descriptor, fixtures));
    const file = {
      channels: [
        { ...valid, id: 'other' },
        { ...valid, settingThatIsMisspelt: 'x' },
      ],
    };
    expect(() => loadConfig({ env: {}, adapters: registry, file })).toThrow(
      new RegExp(
        `channels\\[1\\]\\.settingThatIsMisspelt \\(channel "ch"\\): unknown setting; the ${descriptor.name} adapter takes`,
      ),
    );
  });

  if (descriptor.secret?.required) {
    const setting = descriptor.secret.setting;
    it(`refuses to start without its ${setting} unless verify is false`, () => {
      const entry = channelEntry(descriptor, fixturesOf(descriptor, fixtures), { [setting]: undefined });
      expect(() => loadConfig({ env: {}, adapters: registry, file: { channels: [entry] } })).toThrow(
        new RegExp(
          `channels\\[0\\]\\.${setting} \\(channel "ch"\\): is required: the ${descriptor.name} adapter ${descriptor.secret?.why ?? 'verifies signatures'}`,
        ),
      );
      const [open] = loadConfig({
        env: {},
        adapters: registry,
        file: { channels: [{ ...entry, verify: false }] },
      }).channels;
      expect(() => createAdapter(open!, registry)).not.toThrow();
    });
  } else {
    it('starts without a secret', () => {
      const entry = channelEntry(
        descriptor,
        fixturesOf(descriptor, fixtures),
        descriptor.secret ? { [descriptor.secret.setting]: undefined } : {},
      );
      const [channel] = loadConfig({ env: {}, adapters: registry, file: { channels: [entry] } }).channels;
      expect(() => createAdapter(channel!, registry)).not.toThrow();
    });
  }

  it('normalizes every sample body into sane events', () => {
    const adapter = adapterOf(descriptor, registry, fixturesOf(descriptor, fixtures), { verify: false });
    const samples = fixturesOf(descriptor, fixtures).samples();
    expect(samples.length, `adapter "${descriptor.name}" needs sample bodies`).toBeGreaterThan(0);
    let events = 0;
    for (const body of samples) {
      const result = adapter.normalize(structuredClone(body), delivery);
      for (const event of result.events)
        expectSaneEvent(event, descriptor, `${descriptor.name}: ${JSON.stringify(body)}`);
      events += result.events.length;
    }
    expect(events, `no sample of adapter "${descriptor.name}" yields an event`).toBeGreaterThan(0);
  });

  it('normalize of fuzzed bodies either returns sane events or refuses with 400 bad_shape, never another error', () => {
    const adapter = adapterOf(descriptor, registry, fixturesOf(descriptor, fixtures), { verify: false });
    const inputs = variants(fixturesOf(descriptor, fixtures).samples(), 400, 0x5eed + descriptor.name.length);
    let refused = 0;
    for (const input of inputs) {
      let result;
      try {
        result = adapter.normalize(input, delivery);
      } catch (error) {
        if (!(error instanceof RequestError) || error.status !== 400 || error.code !== 'bad_shape') {
          throw new Error(`${descriptor.name}: ${JSON.stringify(input)} threw ${(error as Error).stack}`);
        }
        expect(error.message).toMatch(/^Body of channel "ch" is not /);
        refused++;
        continue;
      }
      for (const event of result.events)
        expectSaneEvent(
          event,
          descriptor,
          `${descriptor.name}: ${JSON.stringify(input)} -> ${JSON.stringify({ ...event, raw: undefined })}`,
        );
    }
    // The fuzzer reaches the checks: some variants are refused, some still pass.
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThan(inputs.length);
  });
}
