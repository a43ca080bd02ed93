import type { Revised, RevisionKeep } from '../../core/ports/index.js';
import type { Revision } from '../../events/context.js';
import type { Buffers, OpenBuffer } from './buffers.js';
import type { CorrelationGroups } from './correlations.js';
import type { BufferedPart } from '../../events/inbound.js';
import type { Rows } from './rows.js';

/**
 * A recall or an edit in a store owned by one process (see `Conversations.revise`): kept in the
 * rows with the context it changes, then looked for in the buffers named, whose flush lease
 * it ends when it finds the message there.
 */
export function revise(
  rows: Rows,
  buffers: Buffers,
  groups: CorrelationGroups,
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
    if (!buffer || buffer.sessionKey !== sessionKey || !holds(rows, groups, buffer, revision.messageId, now)) continue;
    buffered = true;
    if (buffer.lease) buffers.breakLease(buffer, nextFence(), now);
  }
  return { recorded, buffered, context };
}

/**
 * Whether a part of the buffer is the message: its platform id (else its id), or the platform id
 * another bot's copy of it has in its correlation group (bodies restored without one are read).
 */
function holds(rows: Rows, groups: CorrelationGroups, buffer: OpenBuffer, messageId: string, now: number): boolean {
  const restored: string[] = [];
  const names = (body: BufferedPart): boolean =>
    (body.event.platformId ?? body.event.id) === messageId ||
    (body.correlationKey !== undefined &&
      (groups.get(body.correlationKey, now)?.deliveries.some((copy) => copy.platformId === messageId) ?? false));
  for (const part of buffer.parts) {
    if (!part.body) restored.push(part.id);
    else if (names(part.body)) return true;
  }
  return restored.length > 0 && rows.partBodies(restored).some(names);
}
