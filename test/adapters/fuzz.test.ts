import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAdapter } from '../../src/adapters/index.js';
import type { RawDelivery } from '../../src/adapters/types.js';
import { loadConfig } from '../../src/config/load.js';
import { RequestError } from '../../src/errors.js';
import { fixture } from '../fixtures/index.js';
import { genericSamples, variants } from './fuzz.js';

const NOW = 1_718_000_000_000;
const delivery: RawDelivery = { headers: {}, body: Buffer.alloc(0), query: new URLSearchParams(), now: NOW };

function samplesOf(platform: string): unknown[] {
  if (platform === 'generic') return genericSamples;
  return readdirSync(join(import.meta.dirname, '../fixtures', platform)).map((name) => fixture(platform, name));
}

const platforms = [
  ['whatsapp', 'whatsapp'], ['telegram', 'telegram'], ['slack', 'slack'], ['line', 'line'], ['onebot', 'onebot'], ['generic', 'generic'],
] as const;

describe.each(platforms)('fuzzed %s payloads', (platform, adapterName) => {
  const adapter = createAdapter(loadConfig({ env: {}, file: { channels: [{ id: 'ch', adapter: adapterName, verify: false, botToken: '1:x' }] } }).channels[0]!);

  it('normalize either returns sane events or refuses with 400 bad_shape, never another error', () => {
    const inputs = variants(samplesOf(platform), 400, 0x5eed + platform.length);
    let refused = 0;
    for (const input of inputs) {
      let result;
      try {
        result = adapter.normalize(input, delivery);
      } catch (error) {
        if (!(error instanceof RequestError) || error.status !== 400 || error.code !== 'bad_shape') {
          throw new Error(`${platform}: ${JSON.stringify(input)} threw ${(error as Error).stack}`);
        }
        expect(error.message).toMatch(/^Body of channel "ch" is not /);
        refused++;
        continue;
      }
      for (const event of result.events) {
        const where = `${platform}: ${JSON.stringify(input)} -> ${JSON.stringify({ ...event, raw: undefined })}`;
        expect(Number.isInteger(event.timestamp) && event.timestamp >= 0 && event.timestamp < 32_503_680_000, where).toBe(true);
        for (const text of [event.id, event.sessionKey, event.sender.id, event.text, event.conversation.id, ...(event.platformId === undefined ? [] : [event.platformId])]) {
          expect(typeof text, where).toBe('string');
          expect(text, where).not.toMatch(/\[object Object\]|^function |native code/);
        }
        for (const ref of event.media) expect(typeof (ref.url ?? ref.ref), where).toBe('string');
      }
    }
    // The fuzzer reaches the checks: some variants are refused, some still pass.
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThan(inputs.length);
  });
});
