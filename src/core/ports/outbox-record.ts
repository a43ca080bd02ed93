import type { DeliveryState, OutputType } from '../../events/output.js';

/*
 * The outbox record: the store's shape of an output, which the outbox, buffer and push roles take
 * and give (index.ts re-exports it with them).
 */

export type { DeliveryState };

/** An output on its way into the outbox (the store assigns `seq`). */
export interface OutboxDraft {
  id: string;
  type: OutputType;
  sessionKey: string;
  channel: string;
  createdAt: number;
  /** The output event as JSON, without `seq`. */
  body: string;
  /** `pending` when it must be pushed to the agent, else `none`. */
  state: DeliveryState;
  /** Platform ids (or ingest-answer ids) merged into it, for the trace. */
  messageIds?: string[];
  /**
   * The last context entry (`KeptMessage.seq`) the output carries: its commit removes the
   * session's context up to it, in the same step. Not part of the record.
   */
  contextUpTo?: number;
}

export interface OutboxRecord extends OutboxDraft {
  seq: number;
  attempts: number;
  lastError?: string;
  updatedAt: number;
  /** When a pending record's next push attempt is due. */
  nextAttemptAt?: number;
}

/**
 * The outbox record of a draft, as one object literal of a fixed shape. Not `{ ...draft, seq }`:
 * spreading a draft and adding fields makes V8 build a slow object, and the memory store keeps
 * thousands of these (`bench/pipeline.mjs` shows the difference).
 */
export function outboxRecord(
  draft: OutboxDraft,
  seq: number,
  attempts: number,
  updatedAt: number,
  nextAttemptAt?: number,
): OutboxRecord {
  const record: OutboxRecord = {
    id: draft.id,
    type: draft.type,
    sessionKey: draft.sessionKey,
    channel: draft.channel,
    createdAt: draft.createdAt,
    body: draft.body,
    state: draft.state,
    seq,
    attempts,
    updatedAt,
  };
  if (draft.messageIds !== undefined) record.messageIds = draft.messageIds;
  if (nextAttemptAt !== undefined) record.nextAttemptAt = nextAttemptAt;
  return record;
}
