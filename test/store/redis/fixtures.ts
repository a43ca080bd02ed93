import type { AdmitItem, OutboxDraft } from '../../../src/core/ports/index.js';
import type { RedisStore } from '../../../src/store/redis/redis.js';

const rule = { windowMs: 0, maxWaitMs: 0, maxMessages: 1 };

/** A message closing its own buffer at once (session = id). */
export const closingItem = (id: string): AdmitItem => ({
  claims: [],
  rule,
  closeNow: true,
  part: {
    debounceKey: id,
    receivedAt: 1,
    event: {
      id,
      kind: 'message',
      channel: 'c',
      adapter: 'generic',
      namespace: 'c',
      conversation: { type: 'private', id },
      sessionKey: id,
      sender: { id: 'u' },
      segments: [],
      text: id,
      media: [],
      mentions: [],
      timestamp: 1,
      raw: undefined,
    },
  },
});

export const doneDraft = (id: string, padding = 0): OutboxDraft => ({
  id,
  type: 'chat.processedMessage',
  sessionKey: id,
  channel: 'c',
  createdAt: 1000,
  body: `{"id":"${id}","content":"${'x'.repeat(padding)}"}`,
  state: 'none',
});

/** Admit, claim and commit one output `id` (not to be pushed, `padding` characters of content); resolves its seq. */
export async function commitOne(store: RedisStore, id: string, padding = 0): Promise<number> {
  await store.admit([closingItem(id)], 0);
  const [batch] = await store.claimDue(Date.now() + 60_000, 5000, 1);
  return (await store.commit(batch!, doneDraft(id, padding), 0))!.seq;
}
