import type { ScriptedRedis } from './connections.js';
import { trimReply } from './replies.js';

/** Trim works in script calls of this many records, so no call blocks Redis for long. */
const TRIM_BATCH = 1000;

/**
 * The outbox trim (lua/trim.lua), batch after batch: past `olderThan` or the newest
 * `keepCount`, never past `keepAfterSeq` nor past a live hold of any instance. `now` is ''
 * for the server's clock.
 */
export async function trimOutbox(
  client: ScriptedRedis,
  prefix: string,
  olderThan: number,
  keepCount: number,
  keepAfterSeq: number,
  now: string,
): Promise<number> {
  const cutoff = Number.isFinite(olderThan) ? Math.floor(olderThan) : olderThan > 0 ? Number.MAX_SAFE_INTEGER : 0;
  const keepAfter = Number.isFinite(keepAfterSeq) ? Math.floor(keepAfterSeq) : Number.MAX_SAFE_INTEGER;
  let removed = 0;
  for (let start = '-'; ;) {
    const [batch, next] = trimReply(await client.aiTrim(prefix, cutoff, keepCount, keepAfter, TRIM_BATCH, start, now));
    removed += batch;
    if (next === '') return removed;
    start = next;
  }
}
