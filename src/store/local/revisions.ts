import type { Revised, RevisionKeep } from '../../core/ports/index.js';
import type { Revision } from '../../events/context.js';
import type { Buffers, OpenBuffer } from './buffers.js';
import type { Rows } from './rows.js';

/**
 * A recall or an edit in a store owned by one process (see `Conversations.revise`): kept in the
 * rows with the context it changes, then looked for in the buffers named, whose flush lease
 * it ends when it finds the message there.
 */
export function revise(
  rows: Rows,
  buffers: Buffers,
  nextFence: () => number,
  sessionKey: string,
  debounceKeys: readonly string[],
  revision: Revision,
  now: number,
  keep: RevisionKeep,
): Revised {
  const { recorded, context } = rows.revisionKept(sessionKey, revision, now, keep);
  if (!recorded) return { recorded, buffered: false, context };
  let buffered = false;
  for (const debounceKey of debounceKeys) {
    const buffer = buffers.get(debounceKey);
    if (!buffer || buffer.sessionKey !== sessionKey || !holds(rows, buffer, revision.messageId)) continue;
    buffered = true;
    if (buffer.lease) buffers.breakLease(buffer, nextFence(), now);
  }
  return { recorded, buffered, context };
}

/** Whether a part of the buffer is the message: its platform id, else its id (bodies restored without one are read). */
function holds(rows: Rows, buffer: OpenBuffer, messageId: string): boolean {
  const restored: string[] = [];
  for (const part of buffer.parts) {
    if (!part.body) restored.push(part.id);
    else if ((part.body.event.platformId ?? part.body.event.id) === messageId) return true;
  }
  return (
    restored.length > 0 &&
    rows.partBodies(restored).some((body) => (body.event.platformId ?? body.event.id) === messageId)
  );
}
