import type { BufferRule } from '../../core/ports/index.js';
import { Buffers, type HeldMeta, type OpenBuffer, type PartMeta } from './buffers.js';

export type { HeldMeta };

/**
 * The buffers of a store owned by one process, with the held buffers of agent turns: a
 * session's batches that closed while its turn was open wait in a buffer of their own
 * (`turnBufferKey`), due when the turn closes (see `OpenBuffer.held`).
 */
export class TurnBuffers extends Buffers {
  /**
   * Move a leased batch's parts to the buffer `to` (opened with `rule` when new), ending the
   * lease of `from` as a commit does: a session's held buffer (`held`, agent turns), or its
   * buffer of batches a budget deferred (`deferred`: due then, or later when it already waits
   * longer). `closesLast` marks the batch's end (a followup queue's batches stay apart). A
   * deferred batch taken again from its own buffer goes back in front of what joined it since.
   * Returns the buffer the parts joined.
   */
  holdParts(
    from: OpenBuffer,
    partIds: readonly string[],
    to: { debounceKey: string; rule: BufferRule; held?: HeldMeta; deferred?: number },
    closesLast: boolean,
    now: number,
  ): OpenBuffer {
    const ids = new Set(partIds);
    const moved = from.parts.filter((part) => ids.has(part.id)).map((part) => ({ ...part, closes: false }));
    if (closesLast && moved.length > 0) (moved[moved.length - 1] as PartMeta).closes = true;
    this.commit(from, partIds, now);
    let held = this.open.get(to.debounceKey);
    if (!held) {
      held = {
        debounceKey: to.debounceKey,
        sessionKey: from.sessionKey,
        rule: to.rule,
        parts: moved,
        deadline: now,
        reason: to.held ? 'turn' : 'budget',
        lease: undefined,
        stamp: 0,
        taken: undefined,
      };
      if (to.held) held.held = to.held;
      this.open.set(to.debounceKey, held);
    } else if (from.debounceKey === to.debounceKey) held.parts.unshift(...moved);
    else held.parts.push(...moved);
    if (to.deferred !== undefined) held.deferred = Math.max(held.deferred ?? -Infinity, to.deferred);
    this.rearm(held, now);
    return held;
  }

  /** Settle a buffer's deadline again (a held buffer whose turn closed), unless leased or retrying. */
  rearm(buffer: OpenBuffer, now: number): void {
    if (!buffer.lease && !buffer.retrying) this.arm(buffer, now);
  }
}
