import type { TraceEntry, TraceTrail } from '../events/trace.js';
import type { TrailLog } from '../core/ports/index.js';
import { repeatedBy, Trail } from './trail.js';

/**
 * Rounds of fetching by name: the id's own entries; then what they name (an ingest id's
 * platform id, the delivery a correlated copy joined, the output a batch made); then what
 * those name (the output's push attempts and the other arrivals merged into it). The message a
 * fuzzy duplicate repeats is fetched in the round that found the duplicate.
 */
const ROUNDS = 3;

/** The names an entry is found by. */
function namesOf(entry: TraceEntry): string[] {
  return [entry.id, ...(entry.platformId === undefined ? [] : [entry.platformId]), ...(entry.messageIds ?? [])];
}

/**
 * The trail every instance on a shared store writes and reads (Redis; docs/scaleout.md): entries go
 * to the store, `/v1/activity` follows every instance's, and a lookup fetches the entries
 * related to an id from the store, then answers as the in-process ring does over them.
 */
export function sharedTrail(log: TrailLog): TraceTrail {
  return {
    shared: true,
    publish: (entry) => log.publish(entry),
    last: () => log.last(),
    after: (n, limit) => log.after(n, limit),
    subscribe: (listener) => log.subscribe(listener),
    async lookup(id) {
      const found = new Map<number, TraceEntry>();
      const asked = new Set<string>();
      let names = [id];
      for (let round = 0; round < ROUNDS && names.length > 0; round++) {
        for (const name of names) asked.add(name);
        const entries = await log.naming(names);
        const next = new Set<string>();
        const take = (entry: TraceEntry): void => {
          if (found.has(entry.n)) return;
          found.set(entry.n, entry);
          for (const name of namesOf(entry)) if (name !== '' && !asked.has(name)) next.add(name);
        };
        for (const entry of entries) take(entry);
        // Every message of the same words from the same sender has the key: only the one the
        // duplicate repeats is taken, and followed into its output.
        for (const entry of entries) {
          if (entry.verdict !== 'fuzzy_duplicate' || entry.fuzzyKey === undefined || asked.has(entry.fuzzyKey))
            continue;
          asked.add(entry.fuzzyKey);
          const original = repeatedBy(entry, await log.naming([entry.fuzzyKey]));
          if (original) take(original);
        }
        names = [...next];
      }
      return Trail.of([...found.values()]).lookup(id);
    },
  };
}
