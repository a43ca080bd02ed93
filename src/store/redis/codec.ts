import { UnavailableError } from '../../core/errors.js';
import { outboxRecord, type DeliveryState, type OutboxDraft, type OutboxRecord } from '../../core/ports/index.js';
import { type BufferedPart, type CorrelationRecord, type EventKind } from '../../events/inbound.js';
import type { AdmitItem, AdmitVerdict } from '../../core/ports/index.js';
import { ReplyShapeError, type AdmitReply, type EntryReply } from './replies.js';

/** Script arguments of one delivery's items, in the order ADMIT_LUA reads them. */
export function admitArgs(items: readonly AdmitItem[], maxGroups: number, now = ''): string[] {
  const args = [now, String(maxGroups), String(items.length)];
  for (const item of items) {
    const step = item.correlation;
    if (step) {
      const { delivery } = step;
      args.push(
        '1',
        step.key,
        step.kind,
        String(step.windowMs),
        String(step.time),
        String(step.toleranceS),
        delivery.channel,
        delivery.botId ?? '',
        delivery.botId === undefined ? '0' : '1',
        delivery.platformId ?? '',
        delivery.platformId === undefined ? '0' : '1',
        JSON.stringify(delivery),
      );
    } else args.push('0');
    args.push(String(item.claims.length));
    for (const claim of item.claims) args.push(claim.key, claim.space, String(claim.ttlMs), String(claim.maxKeys));
    args.push(
      item.part.debounceKey,
      item.part.event.sessionKey,
      JSON.stringify(item.part),
      item.unit === undefined ? '' : JSON.stringify(item.unit),
      String(item.rule.windowMs),
      String(item.rule.maxWaitMs),
      String(item.rule.maxMessages),
      item.closeNow ? '1' : '0',
    );
  }
  return args;
}

/** A correlation list: a header `<kind> <time> <firstAt> <expiresAt>`, then delivery JSON. */
export function correlationOf(key: string, list: readonly string[]): CorrelationRecord | undefined {
  const [header, ...deliveries] = list;
  if (header === undefined) return undefined;
  const [kind, time, firstAt, expiresAt] = header.split(' ');
  return {
    key,
    kind: kind as EventKind,
    time: Number(time),
    firstAt: Number(firstAt),
    expiresAt: Number(expiresAt),
    deliveries: deliveries.map((json) => JSON.parse(json) as CorrelationRecord['deliveries'][number]),
  };
}

/** admit.lua's answer as verdicts, item by item. */
export function verdictsOf(items: readonly AdmitItem[], reply: AdmitReply): AdmitVerdict[] {
  return reply.map((answer, index) => {
    const key = items[index]?.correlation?.key ?? '';
    if (answer.verdict === 'claimed') return answer;
    const correlation = correlationOf(key, answer.group);
    if (answer.verdict === 'correlated') {
      if (!correlation) throw new ReplyShapeError('admit', `reply[${index}][2]`, 'a correlation group', answer.group);
      return { verdict: 'correlated', retry: answer.retry, correlation };
    }
    const accepted: AdmitVerdict = { verdict: 'accepted', partId: answer.partId, deadline: answer.deadline };
    if (correlation) accepted.correlation = correlation;
    return accepted;
  });
}

/** A buffer list element (see lua/include/prelude.lua): the part JSON after the header line. */
export function partOf(element: string): BufferedPart {
  return JSON.parse(element.slice(element.indexOf('\n') + 1)) as BufferedPart;
}

/** An outbox record from its stream entry and its delivery state. */
export function recordOf([streamId, fields, state]: EntryReply): OutboxRecord {
  const draft = JSON.parse(fields[7] as string) as OutboxDraft;
  const record = outboxRecord(draft, Number.parseInt(streamId, 10), 0, draft.createdAt);
  if (state) {
    const newline = state.indexOf('\n');
    const [name, attempts, updatedAt, nextAttemptAt] = state.slice(0, newline).split(' ');
    record.state = name as DeliveryState;
    record.attempts = Number(attempts);
    record.updatedAt = Number(updatedAt);
    if (nextAttemptAt !== undefined && nextAttemptAt !== '-') record.nextAttemptAt = Number(nextAttemptAt);
    const lastError = state.slice(newline + 1);
    if (lastError !== '') record.lastError = lastError;
  }
  return record;
}

/** A number reply, or undefined for nil. */
export function numberOrUndefined(reply: unknown): number | undefined {
  return reply === null || reply === undefined ? undefined : Number(reply);
}

/** A Redis URL without its password, for messages. */
export function redacted(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/** A caller's time for a script; '' lets the script use the server's clock. */
export function clock(now: number): string {
  return Number.isFinite(now) ? String(Math.floor(now)) : '';
}

/** Ingest cannot record now: the webhook answers 503 with Retry-After, the platform retries. */
export function unavailable(what: string, cause: unknown): UnavailableError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new UnavailableError('store_unavailable', `Redis store: ${what}: ${detail}`, 1, { stage: 'store', cause });
}
