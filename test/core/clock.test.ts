import { afterEach, describe, expect, it } from 'vitest';
import { withIntervals } from '../../src/core/clock.js';
import { startService, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

/** A clock as written before intervals were part of Clock: time and timeouts only. */
function timeoutsOnly(clock: ManualClock) {
  return {
    now: () => clock.now(),
    setTimeout: (fn: () => void, ms: number) => clock.setTimeout(fn, ms),
    clearTimeout: (handle: unknown) => clock.clearTimeout(handle),
  };
}

describe('a clock handed in without intervals', () => {
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('runs an interval on its timeouts, every period, until it is cleared', async () => {
    const manual = new ManualClock();
    const clock = withIntervals(timeoutsOnly(manual));
    let runs = 0;
    const handle = clock.setInterval(() => void runs++, 1000);
    await manual.advance(999);
    expect(runs).toBe(0);
    await manual.advance(1);
    expect(runs).toBe(1);
    await manual.advance(3000);
    expect(runs).toBe(4);
    clock.clearInterval(handle);
    await manual.advance(5000);
    expect(runs).toBe(4);
  });

  it('keeps a clock that has intervals as it is', () => {
    const manual = new ManualClock();
    expect(withIntervals(manual)).toBe(manual);
  });

  it('starts the service and flushes on it', async () => {
    const manual = new ManualClock();
    service = await startService(
      { debounce: { windowMs: 100, maxWaitMs: 300 } },
      { clock: timeoutsOnly(manual) as unknown as ManualClock },
    );
    const posted = await fetch(`${service.url}/webhooks/generic`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionKey: 'cli:a', content: 'hi' }),
    });
    expect(posted.status).toBe(200);
    await manual.advance(100);
    await service.intake.settle();
    expect(await service.intake.store.outboxAfter(0, 10)).toHaveLength(1);
  });
});
