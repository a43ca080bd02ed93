import { describe, expect, it } from 'vitest';
import { LeaseKeeper } from '../../src/connections/lease-keeper.js';
import type { LeaseFence } from '../../src/events/connection.js';
import type { Leases } from '../../src/core/ports/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/** Two instances' keepers of one lease on one store, on a manual clock; `running` says which runs what the lease guards. */
function pair(store: Leases, clock: ManualClock, leaseMs = 900) {
  const running = new Set<string>();
  const events: string[] = [];
  const fences = new Map<string, LeaseFence>();
  const keeper = (holder: string) =>
    new LeaseKeeper({
      name: 'conn:qq',
      holder,
      leaseMs,
      clock,
      logger: silent,
      leases: store,
      gained: (fence) => {
        fences.set(holder, fence);
        // The guarded thing never runs on two instances at once.
        expect([...running]).toEqual([]);
        running.add(holder);
        events.push(`${holder} gained at ${clock.now()}`);
      },
      lost: async () => {
        running.delete(holder);
        events.push(`${holder} lost at ${clock.now()}`);
      },
    });
  return { a: keeper('a'), b: keeper('b'), running, events, fences };
}

describe('a lease keeper', () => {
  it('runs the guarded connection on one instance; the other takes over at once when the holder stops', async () => {
    const clock = new ManualClock(1_000_000);
    const store = new MemoryStore();
    const { a, b, running, events } = pair(store, clock);
    a.start();
    await clock.advance(0);
    b.start();
    await clock.advance(2000);
    expect([...running]).toEqual(['a']);
    await a.stop();
    expect([...running]).toEqual([]);
    // b asks every leaseMs / 3: it holds the given-back lease at its next ask, long before the lease would have run out.
    await clock.advance(300);
    expect([...running]).toEqual(['b']);
    expect(events.slice(0, 2)).toEqual(['a gained at 1000000', 'a lost at 1002000']);
    const taken = Number(/^b gained at (\d+)$/.exec(events[2] ?? '')?.[1]);
    expect(taken).toBeGreaterThan(1_002_000);
    expect(taken).toBeLessThanOrEqual(1_002_300);
    await b.stop();
  });

  it('stops a holder that cannot renew (store down or hung) before its lease runs out, and the survivor takes over only after', async () => {
    const clock = new ManualClock(1_000_000);
    const store = new MemoryStore();
    let down = false;
    const flaky = {
      holdLease: (...args: Parameters<MemoryStore['holdLease']>) =>
        down && args[1] === 'a' ? new Promise<number | undefined>(() => undefined) : store.holdLease(...args),
      dropLease: (...args: Parameters<MemoryStore['dropLease']>) => store.dropLease(...args),
      fenceHolds: (...args: Parameters<MemoryStore['fenceHolds']>) => store.fenceHolds(...args),
      fencedPut: (...args: Parameters<MemoryStore['fencedPut']>) => store.fencedPut(...args),
    };
    const { a, b, running, events } = pair(flaky, clock);
    a.start();
    await clock.advance(0);
    b.start();
    await clock.advance(500);
    down = true; // a's next ask never answers
    await clock.advance(3000);
    expect(events[0]).toBe('a gained at 1000000');
    // a renewed at 1000300 last; it stops one ask (300 ms) before that lease ends (1001200).
    expect(events[1]).toBe('a lost at 1000900');
    const taken = Number(/b gained at (\d+)/.exec(events[2] ?? '')?.[1]);
    expect(taken).toBeGreaterThanOrEqual(1_001_200);
    expect([...running]).toEqual(['b']);
    await b.stop();
  });

  it('hands the guarded connection back when another holder has the lease (its own ran out meanwhile)', async () => {
    const clock = new ManualClock(1_000_000);
    const store = new MemoryStore();
    const { a, running, events } = pair(store, clock);
    a.start();
    await clock.advance(0);
    // Another instance takes the lease while a's asks are late (a paused process): the store says so at a's next ask.
    await store.holdLease('conn:qq', 'c', 60_000, clock.now() + 5000);
    await clock.advance(1000);
    expect([...running]).toEqual([]);
    expect(events.at(-1)).toMatch(/^a lost at/);
    await a.stop();
  });

  it('stops a paused holder at its first fenced step after a survivor took over, before its own timer would, and lands none of its work', async () => {
    const clock = new ManualClock(1_000_000);
    const store = new MemoryStore();
    const { a, running, events, fences } = pair(store, clock);
    a.start();
    await clock.advance(0);
    const late = fences.get('a') as LeaseFence;
    expect(await late.put('cursor:qq', '1', 60_000)).toBe(true);
    // a is paused (its clock does not move); its lease runs out in the store and "c" takes it over.
    const survivor = (await store.holdLease('conn:qq', 'c', 60_000, clock.now() + 1000)) as number;
    await store.fencedPut('conn:qq', survivor, 'cursor:qq', '5', 60_000, clock.now() + 1000);
    expect(await late.put('cursor:qq', '2', 60_000)).toBe(false);
    expect(events.at(-1)).toBe('a lost at 1000000');
    expect([...running]).toEqual([]);
    expect(await late.holds()).toBe(false);
    expect(await store.sharedGet('cursor:qq', clock.now() + 1001)).toBe('5');
    await a.stop();
  });
});
