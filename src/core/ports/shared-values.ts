/**
 * Short-lived values every instance may use, kept in the store so one fetch serves them all
 * (a platform's API access token: WeChat's, Feishu's tenant token). Memory and SQLite keep them
 * in this process; Redis as keys with a TTL.
 */
export interface SharedValues {
  /** The value stored under `name`, while it lives. */
  sharedGet(name: string, now: number): Promise<string | undefined>;
  /** Store `value` under `name` until `now + ttlMs`. */
  sharedPut(name: string, value: string, ttlMs: number, now: number): Promise<void>;
  /**
   * Store each `[name, value]` of `entries` for `ttlMs` in the step that commits output
   * `outputId`, ahead of its record, instead of a `sharedPut` each (a store whose commit is one
   * script call writes them in it). What no commit of that output takes is forgotten.
   */
  putWithCommit?(outputId: string, entries: ReadonlyArray<readonly [string, string]>, ttlMs: number): void;
}
