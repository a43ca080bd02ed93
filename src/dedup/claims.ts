import { digest } from '../core/digest.js';
import type { DedupOptions } from '../config/schema.js';
import type { InboundEvent } from '../events/inbound.js';
import type { ClaimSpec } from '../core/ports/index.js';

/** Why an admission was refused, by the index of the claim that was taken. */
export type DuplicateKind = 'deduped' | 'client_deduped' | 'fuzzy_deduped';

export interface DedupPlan {
  claims: ClaimSpec[];
  /** `kinds[i]` names what a taken `claims[i]` means. */
  kinds: DuplicateKind[];
}

/** The claim key of its parts: a 96-bit digest (WhatsApp's ids alone are ~60 characters). */
export function claimKey(...parts: string[]): string {
  return digest(parts.join('\u0000'));
}

/** The content a double send repeats: text with whitespace folded, plus each attachment's identity. */
export function fuzzyContent(event: InboundEvent): string {
  let content = event.text.replace(/\s+/g, ' ').trim();
  for (const media of event.media) content += `\u0001${media.hash ?? media.url ?? media.ref ?? ''}`;
  return content;
}

/**
 * The claims an event must win to be admitted: its platform id (retries of one delivery), its
 * client message id (one message the platform delivered twice under two ids) for as long,
 * then its content inside the fuzzy window (double sends), per the channel's `fuzzy` policy.
 * Fuzzy and client-id keys include the sender, so two people in a group who both say "ok" are
 * not merged.
 */
export function dedupPlan(event: InboundEvent, options: DedupOptions): DedupPlan {
  const claims: ClaimSpec[] = [];
  const kinds: DuplicateKind[] = [];
  const spaces = spacesOf(event.channel);
  if (event.platformId !== undefined) {
    claims.push({
      key: claimKey('id', event.channel, event.platformId),
      space: spaces.id,
      ttlMs: options.idTtlMs,
      maxKeys: options.maxKeys,
    });
    kinds.push('deduped');
  }
  if (event.clientMessageId !== undefined) {
    claims.push({
      key: claimKey('cm', event.channel, event.sessionKey, event.sender.id, event.clientMessageId),
      space: spaces.id,
      ttlMs: options.idTtlMs,
      maxKeys: options.maxKeys,
    });
    kinds.push('client_deduped');
  }
  const fuzzy =
    event.kind === 'message' &&
    options.fuzzyWindowMs > 0 &&
    (options.fuzzy === 'always' || (options.fuzzy === 'no-id' && event.platformId === undefined));
  if (fuzzy) {
    claims.push({
      key: claimKey('fz', event.channel, event.sessionKey, event.sender.id, fuzzyContent(event)),
      space: spaces.fuzzy,
      ttlMs: options.fuzzyWindowMs,
      maxKeys: options.maxKeys,
    });
    kinds.push('fuzzy_deduped');
  }
  return { claims, kinds };
}

/** Claim space names per channel, built once rather than per message. */
const spaceNames = new Map<string, { id: string; fuzzy: string }>();

function spacesOf(channel: string): { id: string; fuzzy: string } {
  let spaces = spaceNames.get(channel);
  if (!spaces) spaceNames.set(channel, (spaces = { id: `id:${channel}`, fuzzy: `fz:${channel}` }));
  return spaces;
}
