import type { BufferedPart, CorrelationRecord } from '../../events/inbound.js';
import type { OutboxDraft, OutboxRecord } from '../../core/ports/index.js';
import { type OpenBuffer, type PartMeta } from './buffers.js';
import { TurnBuffers } from './held.js';
import { ClaimTables } from './claim-table.js';
import { CorrelationGroups, copyGroup } from './correlations.js';
import { PushQueue } from './push-queue.js';
import { Deliveries } from './deliveries.js';
import type { ContextMessage, Revision } from '../../events/context.js';
import { revise } from './revisions.js';
import type {
  AdmitItem,
  BudgetAnswer,
  BudgetSpend,
  AdmitVerdict,
  ClaimSpec,
  ContextKeep,
  LeasedBatch,
  RevisionKeep,
} from '../../core/ports/index.js';
import { turnBufferKey, type TurnCommit, type TurnDone, type TurnRule, type TurnView } from '../../core/ports/index.js';
import { turnStep, withLink } from '../rules/turn.js';
import { TurnTable, type TurnState } from './turns.js';
import type { Rows } from './rows.js';
import { spendBudgets } from './budgets.js';

export interface LocalStateOptions {
  maxCorrelationGroups: number;
  /** Fences and push tokens start above it, so a restart never repeats one (SQLite). */
  tokenBase: number;
  /** Dead records already in the rows. */
  dead: number;
  /** A shutdown claim leaves held buffers whose turn is open in the rows, for the next start (SQLite). */
  keepHeld?: boolean;
}

/** The default cap on live correlation groups. */
export const MAX_CORRELATION_GROUPS = 4096;

/**
 * The state of a store no other process shares: claims, correlation groups, buffers and push
 * queues as in-memory indexes over the store's rows. Every operation is synchronous, so the
 * memory store runs it directly and the SQLite store runs it inside one transaction.
 */
export class LocalState {
  readonly claims = new ClaimTables();
  readonly groups: CorrelationGroups;
  readonly buffers: TurnBuffers;
  readonly pushes = new PushQueue();
  readonly turns = new TurnTable();
  readonly deliveries: Deliveries;
  private tokens: number;

  constructor(
    /** The store's rows; the takeovers are theirs alone (see `LocalStore.holdTakeover`). */
    readonly rows: Rows,
    options: LocalStateOptions,
  ) {
    this.groups = new CorrelationGroups(options.maxCorrelationGroups);
    this.buffers = new TurnBuffers(options.keepHeld === true);
    this.tokens = options.tokenBase;
    this.deliveries = new Deliveries(rows, this.pushes, options.dead, this.nextToken);
  }

  private readonly nextToken = (): number => ++this.tokens;

  /** The last fence or push token handed out (a rebuilt state continues above it). */
  get lastToken(): number {
    return this.tokens;
  }

  admit(items: readonly AdmitItem[], now: number): AdmitVerdict[] {
    return items.map((item) => this.admitOne(item, now));
  }

  private admitOne(item: AdmitItem, now: number): AdmitVerdict {
    const decision = item.correlation && this.groups.decide(item.correlation, now);
    if (decision?.seen) {
      if (!decision.retry) {
        this.groups.append(decision.group, (item.correlation as NonNullable<AdmitItem['correlation']>).delivery);
        this.rows.groupSaved(decision.group);
      }
      return { verdict: 'correlated', retry: decision.retry, correlation: copyGroup(decision.group) };
    }
    const taken = this.takenClaim(item.claims, now);
    if (taken !== -1) return { verdict: 'claimed', claim: taken };
    // Only now, with every claim new, is the new group written: a refused item changes nothing.
    if (decision) {
      this.rows.groupsDropped(this.groups.add(decision.group, now));
      this.rows.groupSaved(decision.group);
    }
    for (const claim of item.claims) {
      this.claims.table(claim).claim(claim.key, now);
      this.rows.claimTaken(claim, now);
    }
    const { part } = item;
    const id = this.rows.partAdded(part, item.unit, item.closeNow, item.rule);
    const body: BufferedPart =
      part.correlationKey === undefined
        ? { id, debounceKey: part.debounceKey, receivedAt: part.receivedAt, event: part.event }
        : {
            id,
            debounceKey: part.debounceKey,
            receivedAt: part.receivedAt,
            event: part.event,
            correlationKey: part.correlationKey,
          };
    const meta = { id, receivedAt: part.receivedAt, unit: item.unit ?? id, closes: item.closeNow, body };
    const buffer = this.buffers.append(part.debounceKey, part.event.sessionKey, item.rule, meta, now);
    this.rows.bufferSaved(buffer);
    const deadline = buffer.lease ? this.buffers.deadlineOf(buffer, now).deadline : buffer.deadline;
    return decision
      ? { verdict: 'accepted', partId: id, deadline, correlation: copyGroup(decision.group) }
      : { verdict: 'accepted', partId: id, deadline };
  }

  /** The index of the first claim already taken (before, or earlier in this item), or -1. */
  private takenClaim(claims: readonly ClaimSpec[], now: number): number {
    for (let i = 0; i < claims.length; i++) {
      const claim = claims[i] as ClaimSpec;
      if (this.claims.table(claim).has(claim.key, now)) return i;
      for (let j = 0; j < i; j++) if ((claims[j] as ClaimSpec).key === claim.key) return i;
    }
    return -1;
  }

  correlation(key: string, now: number): CorrelationRecord | undefined {
    const group = this.groups.get(key, now);
    return group && copyGroup(group);
  }

  claimDue(now: number, leaseMs: number, limit: number): LeasedBatch[] {
    return this.buffers.claimDue(now, leaseMs, limit, this.nextToken).map(({ buffer, parts, reason }) => ({
      debounceKey: buffer.debounceKey,
      sessionKey: buffer.sessionKey,
      parts: this.bodies(parts),
      fence: (buffer.lease as NonNullable<OpenBuffer['lease']>).fence,
      leaseUntil: (buffer.lease as NonNullable<OpenBuffer['lease']>).until,
      reason,
    }));
  }

  /** The bodies of `parts`: their own, or read from the rows for parts restored without one. */
  private bodies(parts: readonly PartMeta[]): BufferedPart[] {
    if (parts.every((part) => part.body !== undefined)) return parts.map((part) => part.body as BufferedPart);
    const restored = parts.filter((part) => part.body === undefined).map((part) => part.id);
    const read = new Map(this.rows.partBodies(restored).map((body) => [body.id, body]));
    return parts.map((part) => part.body ?? (read.get(part.id) as BufferedPart));
  }

  renewLease(batch: LeasedBatch, now: number, leaseMs: number): boolean {
    const buffer = this.buffers.leased(batch.debounceKey, batch.fence);
    if (!buffer) return false;
    this.buffers.renew(buffer, now + leaseMs);
    return true;
  }

  commit(batch: LeasedBatch, draft: OutboxDraft, now: number): OutboxRecord | undefined {
    const buffer = this.buffers.leased(batch.debounceKey, batch.fence);
    if (!buffer) return undefined;
    const record = this.rows.outboxAppended(draft, now);
    this.close(buffer, batch, now);
    if (draft.contextUpTo !== undefined) this.rows.contextCleared(batch.sessionKey, draft.contextUpTo);
    if (record.state === 'pending') this.pushes.enqueue(record.sessionKey, { seq: record.seq, nextAttemptAt: now });
    return record;
  }

  /** A leased batch leaves its buffer (a commit, or kept as context): the buffer re-arms from later parts. */
  private close(buffer: OpenBuffer, batch: LeasedBatch, now: number): void {
    const partIds = batch.parts.map((part) => part.id);
    this.rows.partsDeleted(partIds);
    if (this.buffers.commit(buffer, partIds, now)) this.rows.bufferSaved(buffer);
    else this.rows.bufferDropped(buffer.debounceKey);
  }

  /** Close a leased batch as context (see `Conversations.keepContext`): false for a stale fence. */
  keepContext(batch: LeasedBatch, messages: readonly ContextMessage[], now: number, keep: ContextKeep): boolean {
    const buffer = this.buffers.leased(batch.debounceKey, batch.fence);
    if (!buffer) return false;
    this.close(buffer, batch, now);
    this.rows.contextKept(batch.sessionKey, messages, now, keep);
    return true;
  }

  spendBudgets(budgets: readonly BudgetSpend[], now: number): BudgetAnswer {
    return spendBudgets(this.rows, budgets, now);
  }

  /** Move a leased batch to its session's buffer `deferKey` of deferred batches (see `Budgets.deferBatch`). */
  deferBatch(batch: LeasedBatch, deferKey: string, dueAt: number, now: number): boolean {
    const buffer = this.buffers.leased(batch.debounceKey, batch.fence);
    if (!buffer) return false;
    const partIds = batch.parts.map((part) => part.id);
    const to = { debounceKey: deferKey, rule: buffer.rule, deferred: dueAt };
    const deferred = this.buffers.holdParts(buffer, partIds, to, false, now);
    if (!this.buffers.get(batch.debounceKey)) this.rows.bufferDropped(batch.debounceKey);
    this.rows.partsDeferred(partIds, deferKey, deferred.deferred as number);
    this.rows.bufferSaved(deferred);
    return true;
  }

  /** A recall or an edit (see `Conversations.revise`). */
  revise(sessionKey: string, debounceKeys: readonly string[], revision: Revision, now: number, keep: RevisionKeep) {
    return revise(this.rows, this.buffers, this.groups, this.nextToken, sessionKey, debounceKeys, revision, now, keep);
  }

  /** `commit` under the session's turn (see `DebounceBuffers.commitTurn` and rules/turn.ts). */
  commitTurn(batch: LeasedBatch, draft: OutboxDraft, now: number, rule: TurnRule): TurnCommit | undefined {
    const buffer = this.buffers.leased(batch.debounceKey, batch.fence);
    if (!buffer) return undefined;
    const session = batch.sessionKey;
    const heldKey = turnBufferKey(session);
    const fromHeld = buffer.held !== undefined;
    const waiting = fromHeld ? undefined : this.buffers.get(heldKey);
    // Turns off and nothing held: the plain commit, no turn read or written.
    if (rule.mode === 'off' && !fromHeld && waiting === undefined)
      return { held: false, record: this.commit(batch, draft, now) as OutboxRecord };
    const turn = this.turns.get(session);
    const step =
      draft.type === 'chat.processedMessage'
        ? turnStep(rule.mode, fromHeld, waiting !== undefined, this.turns.open(session, now)?.outputId, turn?.outputId)
        : { hold: false, opens: false };
    if (step.hold) {
      // Held: an open turn exists (or held batches wait, and with them their turn).
      const open = turn as TurnState;
      const meta = waiting?.held ?? {
        by: open.outputId,
        until: open.until,
        mode: rule.mode === 'followup' ? ('followup' as const) : ('collect' as const),
        maxMs: rule.maxMs,
      };
      const by = turn ?? { outputId: meta.by, openedAt: meta.until - meta.maxMs, until: meta.until };
      const heldRule = waiting?.rule ?? { windowMs: 0, maxWaitMs: 0, maxMessages: rule.maxHeld };
      const partIds = batch.parts.map((part) => part.id);
      const held = this.buffers.holdParts(
        buffer,
        partIds,
        { debounceKey: heldKey, rule: heldRule, held: meta },
        meta.mode === 'followup',
        now,
      );
      if (this.buffers.get(batch.debounceKey)) this.rows.bufferSaved(buffer);
      else this.rows.bufferDropped(batch.debounceKey);
      this.rows.partsHeld(
        partIds,
        heldKey,
        partIds.map((_, i) => meta.mode === 'followup' && i === partIds.length - 1),
        heldRule.maxMessages,
      );
      this.rows.bufferSaved(held);
      this.rows.turnSaved(session, by, { mode: meta.mode, maxMs: meta.maxMs, maxHeld: heldRule.maxMessages });
      // Held, the draft is not emitted: the context stays for the output the batch becomes at its release.
      return { held: true, by: meta.by, until: meta.until, count: held.parts.length };
    }
    const record = this.commit(
      batch,
      step.link ? { ...draft, body: withLink(draft.body, step.link) } : draft,
      now,
    ) as OutboxRecord;
    if (step.opens) {
      const maxMs = buffer.held?.maxMs ?? rule.maxMs;
      const next: TurnState = { outputId: draft.id, openedAt: now, until: now + maxMs };
      this.turns.set(session, next);
      // What stays held (a followup queue) now waits for this turn.
      const rest = this.buffers.get(heldKey);
      if (rest?.held) {
        rest.held.by = next.outputId;
        rest.held.until = next.until;
        this.buffers.rearm(rest, now);
      }
      this.rows.turnSaved(
        session,
        next,
        rest?.held && { mode: rest.held.mode, maxMs: rest.held.maxMs, maxHeld: rest.rule.maxMessages },
      );
      for (const dropped of this.turns.sweep(now, (key) => this.buffers.get(turnBufferKey(key)) !== undefined))
        this.rows.turnDropped(dropped);
    }
    return step.link ? { held: false, record, link: step.link } : { held: false, record };
  }

  /** Close the turn `outputId` opened, when it is still open: its held buffer is due now. */
  turnDone(outputId: string, now: number): TurnDone {
    const sessionKey = this.rows.outputSession(outputId);
    if (sessionKey === undefined) return { result: 'unknown' };
    const turn = this.turns.open(sessionKey, now);
    const held = this.buffers.get(turnBufferKey(sessionKey));
    const count = held?.parts.length ?? 0;
    if (!turn || turn.outputId !== outputId) return { result: 'already', sessionKey, held: count };
    turn.until = now;
    if (held?.held) {
      held.held.until = now;
      this.buffers.rearm(held, now);
      this.rows.turnSaved(sessionKey, turn, {
        mode: held.held.mode,
        maxMs: held.held.maxMs,
        maxHeld: held.rule.maxMessages,
      });
    } else {
      this.turns.delete(sessionKey);
      this.rows.turnDropped(sessionKey);
    }
    return { result: 'closed', sessionKey, held: count };
  }

  turnOf(sessionKey: string, now: number): TurnView {
    const turn = this.turns.open(sessionKey, now);
    const held = this.buffers.get(turnBufferKey(sessionKey))?.parts.length ?? 0;
    return turn
      ? { sessionKey, open: true, outputId: turn.outputId, openedAt: turn.openedAt, until: turn.until, held }
      : { sessionKey, open: false, held };
  }

  openTurns(now: number, limit: number): TurnView[] {
    const out: TurnView[] = [];
    for (const [sessionKey, turn] of this.turns.entries()) {
      if (out.length >= limit) break;
      if (turn.until > now || this.buffers.get(turnBufferKey(sessionKey))) out.push(this.turnOf(sessionKey, now));
    }
    return out;
  }

  openTurnCount(now: number): number {
    let count = 0;
    for (const [, turn] of this.turns.entries()) if (turn.until > now) count++;
    return count;
  }

  release(batch: LeasedBatch, retryAt: number): void {
    const buffer = this.buffers.leased(batch.debounceKey, batch.fence);
    if (!buffer) return;
    this.buffers.release(buffer, retryAt);
    this.rows.bufferSaved(buffer);
  }

  correlationStats(now: number): { groups: number; evicted: number } {
    return { groups: this.groups.count(now), evicted: this.groups.evicted };
  }
}
