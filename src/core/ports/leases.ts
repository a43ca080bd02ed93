/**
 * Named leases: what only one instance may hold at a time (a channel's outgoing connection,
 * src/connections/lease-keeper.ts). Memory and SQLite hold them for this process; Redis for
 * every instance on it.
 */
export interface Leases {
  /**
   * Take the lease `name` for `holder` until `now + ttlMs`, or renew it when `holder` has it.
   * Resolves its fencing token, which grows each time the lease changes hands; undefined while
   * another holder's lease is live.
   */
  holdLease(name: string, holder: string, ttlMs: number, now: number): Promise<number | undefined>;
  /** Give the lease back when `holder` still has it, so another instance can take it at once. */
  dropLease(name: string, holder: string): Promise<void>;
  /** True while the lease `name` still has `fence`: it has not changed hands since that holder took it. */
  fenceHolds(name: string, fence: number): Promise<boolean>;
  /**
   * `sharedPut` fenced by a lease: stores `value` under `key` only while the lease `name` still
   * has `fence`, in one step. False, and nothing written, once the lease changed hands (a late
   * holder's cursor never overwrites its successor's).
   */
  fencedPut(name: string, fence: number, key: string, value: string, ttlMs: number, now: number): Promise<boolean>;
}
