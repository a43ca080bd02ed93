import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/configure.js';
import { createIntake } from '../src/intake.js';
import type { LeasedBatch } from '../src/ports.js';
import { MemoryStore } from '../src/store/local/memory.js';
import { deliverJson, silent, tempDir } from './helpers.js';
import { ManualClock } from './manual-clock.js';

/** A store that notes the lease of every claim of due buffers. */
class LeaseLog extends MemoryStore {
  readonly claimLeases: number[] = [];

  override async claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]> {
    this.claimLeases.push(leaseMs);
    return super.claimDue(now, leaseMs, limit);
  }
}

/** The leases an intake (built with `options`) claims a due buffer with. */
async function leasesOf(options: { flushLeaseMs?: number }): Promise<number[]> {
  const dir = tempDir();
  const clock = new ManualClock();
  const store = new LeaseLog();
  const config = loadConfig({ env: {}, cwd: dir.path, file: { store: 'memory', logLevel: 'silent', media: { dir: 'media' }, debounce: { windowMs: 1000 } } });
  const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock, store, ...options });
  try {
    expect((await deliverJson(intake, { id: 'm1', sessionKey: 's1', content: 'hello' }, clock.now())).status).toBe(200);
    await clock.advance(2000);
    for (let i = 0; i < 100 && (await store.outboxAfter(0, 10)).length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect((await store.outboxAfter(0, 10)).length).toBe(1);
    return store.claimLeases;
  } finally {
    await intake.close();
    dir.remove();
  }
}

describe('the flush lease', () => {
  it('is 30 s unless createIntake is given flushLeaseMs, which it then claims due buffers with', async () => {
    const byDefault = await leasesOf({});
    expect(byDefault.length).toBeGreaterThan(0);
    expect(new Set(byDefault)).toEqual(new Set([30_000]));
    const short = await leasesOf({ flushLeaseMs: 2000 });
    expect(short.length).toBeGreaterThan(0);
    expect(new Set(short)).toEqual(new Set([2000]));
  });
});
