import type { OutboxRecord } from '../core/ports/index.js';
import type { TraceEntry, TraceTrail } from '../events/trace.js';

/** `GET /v1/trace/:id`: what happened to one message. */
export interface TraceAnswer {
  id: string;
  /** Arrivals of the message and of what was merged with it: verdict, reason, sender, preview. */
  arrivals: TraceEntry[];
  /** The outputs it went into, with their delivery state when still retained. */
  outputs: Array<{
    id: string;
    seq: number | null;
    type: string | null;
    sessionKey: string | null;
    messageIds: string[];
    delivery: { state: string; attempts: number; lastError: string | null } | null;
    retained: boolean;
  }>;
  /** Push attempts of those outputs. */
  attempts: TraceEntry[];
  /** Agent turns (docs/turns.md): the turn a message was held by, and when it was released. */
  turns: TraceEntry[];
}

/**
 * The trace of an id (platform id, ingest-answer id or output id), from the trail (this
 * process's, or every instance's on a shared store) and the store's outbox (`outboxGet`);
 * undefined when neither knows it.
 */
export async function traceOf(
  id: string,
  trail: Pick<TraceTrail, 'lookup'>,
  outboxGet: (id: string) => Promise<OutboxRecord | undefined>,
): Promise<TraceAnswer | undefined> {
  const found = await trail.lookup(id);
  const direct = await outboxGet(id);
  const outputIds = new Set(found.outputs);
  if (direct) outputIds.add(direct.id);
  if (found.entries.length === 0 && outputIds.size === 0) return undefined;
  const outputs: TraceAnswer['outputs'] = [];
  for (const outputId of outputIds) {
    const stored = direct?.id === outputId ? direct : await outboxGet(outputId);
    const batch = found.entries.find((entry) => entry.kind === 'batch' && entry.id === outputId);
    outputs.push({
      id: outputId,
      seq: stored?.seq ?? batch?.seq ?? null,
      type: stored?.type ?? null,
      sessionKey: stored?.sessionKey ?? batch?.sessionKey ?? null,
      messageIds: batch?.messageIds ?? stored?.messageIds ?? [],
      delivery: stored ? { state: stored.state, attempts: stored.attempts, lastError: stored.lastError ?? null } : null,
      retained: stored !== undefined,
    });
  }
  return {
    id,
    arrivals: found.entries.filter((entry) => entry.kind === 'verdict'),
    outputs,
    attempts: found.entries.filter((entry) => entry.kind === 'delivery'),
    turns: found.entries.filter((entry) => entry.kind === 'turn'),
  };
}
