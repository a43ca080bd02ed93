import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake } from '../../src/service/intake.js';
import type { LeasedBatch, PushLease } from '../../src/core/ports/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { deliverJson, tempDir, until } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';
import { serve } from '../support/servers.js';

const SECRET = 'whsec_' + Buffer.from('lease-agent-secret-0123456789abc').toString('base64');

/** A store that notes the lease of every claim of due buffers and of pushes. */
class LeaseLog extends MemoryStore {
  readonly flushLeases: number[] = [];
  readonly pushLeases: number[] = [];

  override async claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]> {
    this.flushLeases.push(leaseMs);
    return super.claimDue(now, leaseMs, limit);
  }

  override async claimPush(now: number, leaseMs: number, limit: number): Promise<PushLease[]> {
    this.pushLeases.push(leaseMs);
    return super.claimPush(now, leaseMs, limit);
  }
}

/** The leases an intake built with `options` claims one message's buffer and push with. */
async function leasesOf(options: {
  flushLeaseMs?: number;
  pushLeaseMs?: number;
}): Promise<{ flush: Set<number>; push: Set<number> }> {
  const dir = tempDir();
  const agent = await serve((_req, res) => res.end());
  const clock = new ManualClock();
  const store = new LeaseLog();
  const config = loadConfig({
    env: {},
    cwd: dir.path,
    file: {
      store: 'memory',
      logLevel: 'silent',
      media: { dir: 'media' },
      debounce: { windowMs: 1000 },
      agent: { url: `http://127.0.0.1:${agent.port}/agent`, secret: SECRET, timeoutMs: 1500 },
    },
  });
  const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock, store, ...options });
  try {
    expect((await deliverJson(intake, { id: 'm1', sessionKey: 's1', content: 'hello' }, clock.now())).status).toBe(200);
    await clock.advance(2000);
    await until(
      async () => (await store.deliveryCounts()).pending === 0 && (await store.outboxAfter(0, 10)).length === 1,
    );
    expect(agent.hits.get('/agent')).toBe(1);
    return { flush: new Set(store.flushLeases), push: new Set(store.pushLeases) };
  } finally {
    await intake.close();
    await agent.close();
    dir.remove();
  }
}

describe('the flush and push leases', () => {
  it('are 30 s and agent.timeoutMs x 2 + 5 s unless createIntake is given flushLeaseMs and pushLeaseMs, which it then claims with', async () => {
    expect(await leasesOf({})).toEqual({ flush: new Set([30_000]), push: new Set([8000]) });
    expect(await leasesOf({ flushLeaseMs: 2000, pushLeaseMs: 3000 })).toEqual({
      flush: new Set([2000]),
      push: new Set([3000]),
    });
  });
});
