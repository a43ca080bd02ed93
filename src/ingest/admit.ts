import type { Logger } from 'pino';
import type { BufferedPart, CorrelationRecord, InboundEvent } from '../events/inbound.js';
import type { TraceEntry, Verdict } from '../events/trace.js';
import type { AdmissionStore, AdmitItem, AdmitVerdict } from '../core/ports/index.js';

/** What a taken claim means, by its index in the item's claims. */
export type DuplicateKind = 'deduped' | 'client_deduped' | 'fuzzy_deduped';

/** The answer to a webhook delivery (docs/http.md). */
export interface IngestSummary {
  accepted: number;
  duplicates: number;
  events: Array<{ id: string; verdict: AnswerVerdict }>;
}

/** Verdicts as the ingest answer names them (a looped message is `ignored` there). */
export type AnswerVerdict = 'accepted' | 'duplicate' | 'fuzzy_duplicate' | 'correlated' | 'ignored';

/** One event the store took: it waits in a buffer until `deadline` (the part's event is the delivered object). */
export interface AcceptedEvent {
  part: BufferedPart;
  deadline: number;
}

export interface Admitted {
  summary: IngestSummary;
  accepted: AcceptedEvent[];
  /** Deliveries of events already taken (retries, other bots' copies): `!` handlers see them. */
  repeats: InboundEvent[];
  /** Correlation groups the store returned, by event (the library's correlation views). */
  groups: Array<[InboundEvent, CorrelationRecord]>;
}

/** How one event enters the store, and what each of its claims means when taken. */
export interface Plan {
  item: AdmitItem;
  kinds: readonly DuplicateKind[];
}

export type Action = 'received' | 'deduped' | 'fuzzy_deduped' | 'correlated' | 'looped' | 'ignored' | 'denied';

export interface AdmitOptions {
  /** The store's admission role: one atomic step per delivery (or per turn's deliveries: `AdmissionBatches`). */
  store: Pick<AdmissionStore, 'admit'>;
  /** Bot-loop guard: a message sent by one of our own bots is dropped. */
  bots: { isOwnBot(namespace: string, id: string): boolean };
  /** Access (contract §12): why an event's sender or conversation is denied, or undefined. Denied events are acknowledged and kept nowhere. */
  denied?(event: InboundEvent): string | undefined;
  /** Claims, correlation step and buffer rule of an event (the `index`-th of a delivery signed with `deliveryId`), built by the composition. */
  plan(event: InboundEvent, now: number, index: number, deliveryId: string | undefined): Plan;
  /** Each verdict counted by channel and adapter. */
  metrics: { message(channel: string, adapter: string, action: Action): void };
  /** The verdict trail (`/v1/trace`, `/v1/activity`). */
  trail(entry: Omit<TraceEntry, 'n'>): void;
  /** One `debug` line per verdict (accepted, duplicate, fuzzy duplicate, correlated copy, looped, ignored). */
  logger?: Logger;
}

const duplicateVerdict: Record<DuplicateKind, Verdict> = {
  deduped: 'duplicate',
  client_deduped: 'duplicate',
  fuzzy_deduped: 'fuzzy_duplicate',
};

/**
 * The per-delivery decision: every event of one webhook delivery is checked against our own
 * bots, then correlated, claimed and buffered in ONE store step, and gets its verdict. The
 * webhook is answered only after that step resolved, so an acknowledged event is recorded.
 * Store errors propagate: the caller answers 503 and nothing was recorded.
 */
export function createAdmit(options: AdmitOptions) {
  /** `dropped`: events the inbound chain (`intake.use`) dropped; they are answered `ignored` and recorded nowhere. */
  return async function admit(
    events: readonly InboundEvent[],
    now: number,
    deliveryId?: string,
    dropped?: ReadonlySet<InboundEvent>,
  ): Promise<Admitted> {
    const admitted: Admitted = {
      summary: { accepted: 0, duplicates: 0, events: [] },
      accepted: [],
      repeats: [],
      groups: [],
    };
    const plans: Array<Plan | undefined> = [];
    const items: AdmitItem[] = [];
    let refusals: Map<InboundEvent, string> | undefined;
    for (let index = 0; index < events.length; index++) {
      const event = events[index] as InboundEvent;
      options.metrics.message(event.channel, event.adapter, 'received');
      if (
        dropped?.has(event) ||
        (event.kind === 'message' && options.bots.isOwnBot(event.namespace, event.sender.id))
      ) {
        plans.push(undefined);
        continue;
      }
      const denial = options.denied?.(event);
      if (denial !== undefined) {
        (refusals ??= new Map()).set(event, denial);
        plans.push(undefined);
        continue;
      }
      const plan = options.plan(event, now, index, deliveryId);
      plans.push(plan);
      items.push(plan.item);
    }
    const verdicts = items.length > 0 ? await options.store.admit(items, now) : [];
    let next = 0;
    const debug = options.logger?.isLevelEnabled('debug') === true;
    for (let i = 0; i < events.length; i++) {
      const event = events[i] as InboundEvent;
      const plan = plans[i];
      let verdict: Verdict;
      let reason: string | undefined;
      /** A correlated copy: the platform id of the delivery it joined (whose output it went into). */
      let joined: string | undefined;
      const denial = plan ? undefined : refusals?.get(event);
      if (denial !== undefined) {
        verdict = 'denied';
        reason = denial;
        options.metrics.message(event.channel, event.adapter, 'denied');
      } else if (!plan && dropped?.has(event)) {
        verdict = 'ignored';
        reason = 'dropped by an inbound middleware (intake.use)';
        options.metrics.message(event.channel, event.adapter, 'ignored');
      } else if (!plan) {
        verdict = 'looped';
        reason = `sent by our own bot ${event.sender.id}`;
        options.metrics.message(event.channel, event.adapter, 'looped');
      } else {
        const result = verdicts[next++] as AdmitVerdict;
        if (result.verdict === 'accepted') {
          verdict = 'accepted';
          const { debounceKey, receivedAt, correlationKey } = plan.item.part;
          admitted.accepted.push({
            part: {
              id: result.partId,
              debounceKey,
              receivedAt,
              event,
              ...(correlationKey === undefined ? {} : { correlationKey }),
            },
            deadline: result.deadline,
          });
          if (result.correlation) admitted.groups.push([event, result.correlation]);
        } else if (result.verdict === 'claimed') {
          const kind = plan.kinds[result.claim] ?? 'deduped';
          verdict = duplicateVerdict[kind];
          reason =
            kind === 'deduped'
              ? `platform id ${event.platformId ?? event.id} was already taken`
              : kind === 'client_deduped'
                ? `client message id ${event.clientMessageId ?? ''} was already taken`
                : 'the same sender sent the same content within dedup.fuzzyWindowMs';
          options.metrics.message(event.channel, event.adapter, kind === 'fuzzy_deduped' ? kind : 'deduped');
          admitted.repeats.push(event);
        } else {
          const first = result.correlation.deliveries[0];
          verdict = result.retry ? 'duplicate' : 'correlated';
          joined = first?.platformId;
          reason = result.retry
            ? 'the same bot delivered it again'
            : `first delivered by ${first ? `${first.channel}${first.botId ? `/${first.botId}` : ''}` : 'another bot'}`;
          options.metrics.message(event.channel, event.adapter, result.retry ? 'deduped' : 'correlated');
          admitted.repeats.push(event);
          admitted.groups.push([event, result.correlation]);
        }
      }
      // Looped and denied events are `ignored` to the platform: acknowledged, nothing said of why.
      const answer: AnswerVerdict =
        verdict === 'looped' || verdict === 'rejected' || verdict === 'denied' ? 'ignored' : (verdict as AnswerVerdict);
      if (answer === 'accepted') admitted.summary.accepted++;
      else if (answer !== 'ignored') admitted.summary.duplicates++;
      admitted.summary.events.push({ id: event.id, verdict: answer });
      // The message that took the fuzzy key, and a double send of it, carry it in the trail.
      const fuzzy =
        plan && (verdict === 'accepted' || verdict === 'fuzzy_duplicate')
          ? plan.item.claims[plan.kinds.indexOf('fuzzy_deduped')]?.key
          : undefined;
      options.trail(trailEntry(event, verdict, now, reason, joined, fuzzy));
      if (debug)
        options.logger?.debug(
          {
            channel: event.channel,
            id: event.id,
            platformId: event.platformId,
            sessionKey: event.sessionKey,
            verdict,
            reason,
          },
          `${verdict}: ${reason ?? 'buffered for its session'}`,
        );
    }
    return admitted;
  };
}

const PREVIEW = 120;

function trailEntry(
  event: InboundEvent,
  verdict: Verdict,
  at: number,
  reason: string | undefined,
  joined: string | undefined,
  fuzzyKey: string | undefined,
): Omit<TraceEntry, 'n'> {
  const entry: Omit<TraceEntry, 'n'> = {
    at,
    channel: event.channel,
    kind: 'verdict',
    id: event.id,
    sessionKey: event.sessionKey,
    sender: event.sender,
    preview: event.text.length > PREVIEW ? `${event.text.slice(0, PREVIEW)}…` : event.text,
    verdict,
  };
  if (event.platformId !== undefined) entry.platformId = event.platformId;
  if (event.botId !== undefined) entry.bot = event.botId;
  if (reason !== undefined) entry.reason = reason;
  // The trace of a correlated copy follows the first delivery into its output.
  if (joined !== undefined && joined !== event.platformId) entry.messageIds = [joined];
  if (fuzzyKey !== undefined) entry.fuzzyKey = fuzzyKey;
  return entry;
}
