import type { InOrder } from '../events/transport.js';

/** A run of one: nothing before it, nothing after it waits. */
const ALONE: InOrder = { reached: () => undefined, earlier: () => Promise.resolve() };

/**
 * The deliveries of one read (a socket read, a polled page) in arrival order, each started once
 * the one before reached admission (its store step queued) or ended: their steps before
 * admission run in the order they came, and their admissions reach the store in one turn of the
 * event loop, so one store step records the read (ingest/batch.ts takes them in order). Running
 * them all at once would not do: each would reach admission when its own steps finished, and a
 * reply whose quote is looked up would overtake the frame that recorded the quoted message.
 * A step that reads what an earlier delivery's admission writes awaits `earlier()` first.
 *
 * `handle` must not reject (it answers its own failures). Resolves with each outcome, in order,
 * once every delivery of the read is settled.
 */
export async function inOrder<T, R>(items: readonly T[], handle: (item: T, turn: InOrder) => Promise<R>): Promise<R[]> {
  if (items.length === 1) return [await handle(items[0] as T, ALONE)];
  const handled: Promise<R>[] = [];
  for (const item of items) {
    const before = handled.length;
    let reached!: () => void;
    const reaching = new Promise<void>((resolve) => (reached = resolve));
    const run = handle(item, { reached, earlier: () => Promise.all(handled.slice(0, before)) });
    handled.push(run);
    await Promise.race([reaching, run]);
  }
  return Promise.all(handled);
}
