import { adapters } from '../../src/adapters/index.js';
import type { Adapter, Normalized } from '../../src/adapters/kit/types.js';
import { adapterFixtures } from '../fixtures/adapters.js';
import { fixtureBytes } from '../fixtures/index.js';
import { adapterOf } from './suite.js';
import { ingest } from './wx-kit.js';

/** Receive time of the deliveries below, ms: after every fixture's own timestamp. */
export const NOW = 1_718_000_010_000;

/** The adapter of a working channel `ch` of `name` (signatures off), with settings over the fixture's. */
export function channelOf(name: string, extra: Record<string, unknown> = {}): Adapter {
  const descriptor = adapters.find((candidate) => candidate.name === name)!;
  return adapterOf(descriptor, adapters, adapterFixtures.get(name)!, { verify: false, ...extra });
}

/** What `adapter` makes of a fixture of test/fixtures/<platform>/, as the webhook delivers it. */
export function normalizedFixture(adapter: Adapter, platform: string, file: string): Normalized {
  return normalizedBody(adapter, fixtureBytes(platform, file));
}

/** What `adapter` makes of a body (an object is sent as JSON). */
export function normalizedBody(adapter: Adapter, body: unknown): Normalized {
  return ingest(adapter, {
    headers: { 'content-type': 'application/json' },
    body: Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body)),
    query: new URLSearchParams(),
    now: NOW,
    authenticated: true,
  });
}
