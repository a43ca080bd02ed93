import type { BufferRule, FlushReason } from '../../core/ports/index.js';

/**
 * How a debounce buffer closes: the store rules every backend runs. The Redis store runs the
 * same two functions in Lua (close.lua, beside this file, line for line); the store test kit's
 * table of cases runs against every store, so the two cannot drift apart.
 */

/** What the cut needs of a part. */
export interface CutPart {
  receivedAt: number;
  /** Counts once toward `maxMessages` per distinct value (an album). */
  unit: string;
  /** A command: closes its buffer at once. */
  closes: boolean;
}

/**
 * How many leading parts make the next batch: up to and including the first command, or the
 * part whose unit reached `maxMessages` (an album's later parts go with its first); all of
 * them when neither happened. Parts past it arrived after the buffer closed: the next batch.
 */
export function batchOf(
  parts: readonly CutPart[],
  maxMessages: number,
): { size: number; closed?: 'command' | 'count' } {
  // Fewer parts than maxMessages means fewer units: only a command can close the batch, and
  // no set of units is built (the common case, on every admission).
  const units = parts.length < maxMessages ? undefined : new Set<string>();
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as CutPart;
    if (part.closes) return { size: i + 1, closed: 'command' };
    if (!units) continue;
    units.add(part.unit);
    if (units.size >= maxMessages) {
      let end = i + 1;
      while (end < parts.length && units.has((parts[end] as CutPart).unit) && !(parts[end] as CutPart).closes) end++;
      return { size: end, closed: 'count' };
    }
  }
  return { size: parts.length };
}

/**
 * The deadline of a buffer no command and no count has closed: quiet for `windowMs` after its
 * last part, but never later than `maxWaitMs` after its first.
 */
export function closeAt(firstAt: number, lastAt: number, rule: BufferRule): { deadline: number; reason: FlushReason } {
  const quietAt = lastAt + rule.windowMs;
  const hardAt = firstAt + rule.maxWaitMs;
  return quietAt <= hardAt ? { deadline: quietAt, reason: 'window' } : { deadline: hardAt, reason: 'max_wait' };
}
