import type { LeasedBatch } from '../../core/ports/index.js';
import { partOf } from './codec.js';
import { conversationState } from './conversations.js';
import type { ConnectionLogger, ScriptedRedis } from './connections.js';
import type { ClaimReply } from './replies.js';

/**
 * The batches of a claim. A buffer leased with no parts at all lost its list to an eviction
 * (its meta stayed): it is dropped in the store under its fence, with an error in the log,
 * instead of reaching the flush as a batch of nothing (which cannot be emitted and would be
 * retried for ever, its session held).
 */
export async function claimedBatches(
  reply: ClaimReply,
  client: ScriptedRedis,
  prefix: string,
  logger?: ConnectionLogger,
): Promise<LeasedBatch[]> {
  const batches: LeasedBatch[] = [];
  for (const [debounceKey, sessionKey, fence, leaseUntil, reason, parts, conversation] of reply) {
    if (parts.length > 0) {
      const batch: LeasedBatch = { debounceKey, sessionKey, fence, leaseUntil, reason, parts: parts.map(partOf) };
      if (conversation)
        batch.conversation = { state: conversationState(conversation[0]), keepsContext: conversation[1] };
      batches.push(batch);
      continue;
    }
    const dropped = await client.aiDropEvicted(prefix, debounceKey, sessionKey, fence);
    const message = `Redis store: buffer "${debounceKey}" lost its parts (evicted? set maxmemory-policy noeviction); it was dropped and its messages are lost, session "${sessionKey}" goes on`;
    const detail = { debounceKey, sessionKey, fence, dropped: dropped === 1 };
    if (logger?.error) logger.error(detail, message);
    else logger?.warn(detail, message);
  }
  return batches;
}
