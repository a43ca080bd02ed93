import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';

describe('forwards settings', () => {
  it('default to 100 messages, 3 levels, 20000 characters and 10 s, and a channel overrides them', () => {
    const config = loadConfig({
      env: {},
      file: {
        forwards: { maxNodes: 50 },
        channels: [{ id: 'q', adapter: 'onebot', verify: false, forwards: { maxDepth: 1 } }],
      },
    });
    expect(config.forwards).toEqual({ maxNodes: 50, maxDepth: 3, maxChars: 20_000, timeoutMs: 10_000 });
    expect(config.channels[0]!.forwards).toEqual({ maxNodes: 50, maxDepth: 1, maxChars: 20_000, timeoutMs: 10_000 });
  });

  it('refuses a bound out of range, naming it', () => {
    expect(() => loadConfig({ env: {}, file: { forwards: { maxDepth: 0 } } })).toThrow(/forwards\.maxDepth/);
    expect(() => loadConfig({ env: {}, file: { forwards: { maxNodes: 5000 } } })).toThrow(/forwards\.maxNodes/);
    expect(() =>
      loadConfig({ env: {}, file: { channels: [{ id: 'q', adapter: 'generic', forwards: { depth: 2 } }] } }),
    ).toThrow(/forwards/);
  });
});
