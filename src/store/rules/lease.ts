/**
 * Named leases (`Leases` in ports.ts): the store rule every backend runs. The Redis store runs
 * the same function in Lua (lease.lua, beside this file, line for line); the store test kit's
 * lease cases run against every store.
 */

/** A lease as a store keeps it. A dropped lease stays as a row whose time is up, so its fence keeps growing. */
export interface LeaseRow {
  holder: string;
  until: number;
  fence: number;
}

/**
 * The lease after `holder` asks for it at `now`: renewed when it holds it, taken when it is
 * free or its holder's time is up (the fence grows: a new hand), undefined while another
 * holder's time runs.
 */
export function leaseAfter(
  row: LeaseRow | undefined,
  holder: string,
  ttlMs: number,
  now: number,
): LeaseRow | undefined {
  if (row !== undefined && row.holder !== holder && row.until > now) return undefined;
  const fence = row !== undefined && row.holder === holder ? row.fence : (row?.fence ?? 0) + 1;
  return { holder, until: now + ttlMs, fence };
}

/** Whether a holder's work under `fence` may still land: the lease has not changed hands since (its time may be up). */
export function fenceHolds(row: LeaseRow | undefined, fence: number): boolean {
  return row !== undefined && row.fence === fence;
}
