import type { Segment } from '../../events/inbound.js';

/*
 * OneBot-style segments, as OneBot gives them and Milky's are read into: the plain text they
 * hold, and whether one is a merged forward.
 */

/** A merged forward: a segment type we do not model, so `other` with its type kept. */
export const isForward = (segment: Segment): boolean => segment.type === 'other' && segment.data.type === 'forward';

/** Plain text of a message: text segments, adjacent ones joined, white space folded and trimmed. */
export function contentOf(segments: readonly Segment[]): string {
  return segments
    .filter((s) => s.type === 'text' || isForward(s))
    .map((s) => (s.type === 'text' ? (s.data.text ?? '') : ' [forwarded messages] '))
    .join('')
    .replace(/\s+/g, ' ')
    .trim();
}
