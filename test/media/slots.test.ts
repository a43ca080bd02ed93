import { describe, expect, it } from 'vitest';
import { Slots, type Release } from '../../src/media/slots.js';

const never = new AbortController().signal;

describe('Slots', () => {
  it('grants at most the limit, at most the cap per key, and lets waiting keys take turns', async () => {
    const slots = new Slots(2);
    const order: string[] = [];
    const held: Release[] = [];
    const take = (key: string) =>
      slots.acquire(key, 1, never).then((release) => {
        order.push(key);
        held.push(release);
      });
    const waits = [take('a'), take('a'), take('a'), take('b'), take('b'), take('c')];
    await Promise.resolve();
    expect([slots.active, slots.waiting]).toEqual([2, 4]);
    // Give slots back one by one: each goes to the next key in turn, never to a key at its cap.
    while (held.length > 0) {
      held.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(waits);
    expect(order).toEqual(['a', 'b', 'c', 'a', 'b', 'a']);
    expect([slots.active, slots.waiting]).toEqual([0, 0]);
  });

  it("drops a waiter whose signal aborts, with the signal's reason", async () => {
    const slots = new Slots(1);
    const first = await slots.acquire('a', 1, never);
    const controller = new AbortController();
    const waiting = slots.acquire('b', 1, controller.signal);
    controller.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
    expect(slots.waiting).toBe(0);
    first();
    first();
    expect(slots.active).toBe(0);
  });
});
