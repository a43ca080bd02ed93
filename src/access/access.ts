import type { AccessOptions } from '../config/activation.js';
import type { InboundEvent } from '../events/inbound.js';

/** Why an event is denied (its sender or its conversation), or undefined when it may pass. */
export type AccessTest = (event: Pick<InboundEvent, 'namespace' | 'sender' | 'sessionKey'>) => string | undefined;

/**
 * The access rule of a channel (contract §12): entries are `<namespace>:<sender id>`, session keys,
 * or `@<list>`. A sender or conversation in `deny` is denied; when `allow` lists anything, a
 * delivery whose sender and conversation are both missing from it is denied too. Lists are
 * expanded once, into sets: one lookup per event whatever their size.
 */
export function accessTest(access: AccessOptions): AccessTest | undefined {
  if (access.allow.length === 0 && access.deny.length === 0) return undefined;
  const expand = (entries: readonly string[]) =>
    new Set(entries.flatMap((entry) => (entry.startsWith('@') ? (access.lists[entry.slice(1)] ?? []) : [entry])));
  const allow = expand(access.allow);
  const deny = expand(access.deny);
  const allowAll = access.allow.length === 0;
  return function denied(event) {
    const sender = `${event.namespace}:${event.sender.id}`;
    if (deny.has(sender)) return `sender ${sender} is in access.deny`;
    if (deny.has(event.sessionKey)) return `conversation ${event.sessionKey} is in access.deny`;
    if (allowAll || allow.has(sender) || allow.has(event.sessionKey)) return undefined;
    return `neither sender ${sender} nor conversation ${event.sessionKey} is in access.allow`;
  };
}
