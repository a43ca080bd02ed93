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
}
