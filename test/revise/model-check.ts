import { item } from '../../src/testing/index.js';
import { turnBufferKey, type LeasedBatch, type Store, type TurnRule } from '../../src/core/ports/index.js';
import type { BufferedPart } from '../../src/events/inbound.js';
import { revisedParts } from '../../src/revise/stage.js';
import { seeded } from '../adapters/fuzz.js';

/**
 * Randomized check of recalls and edits (contract §13) on a store, driven as the pipeline drives
 * it: seeded sequences of arrivals, recalls and edits (of messages waiting, held for a turn,
 * emitted, or not arrived yet), flushes that read the session's revisions when they start and
 * commit later (some leases kept across other steps, some run out and taken over), turn dones
 * and time jumps; then everything is flushed. Checked: no message is emitted after its recall
 * was recorded; an emitted message carries the last edit recorded before its commit; every
 * message never recalled before its emission is emitted exactly once.
 */
export interface RevisionViolation {
  seed: number;
  message: string;
  log: string[];
}
export type RevisionCovered = 'recalled-waiting' | 'recalled-leased' | 'recalled-early' | 'edited' | 'stale' | 'held';

const SESSIONS = ['s1', 's2'];
const RULES: TurnRule[] = [
  { mode: 'off', maxMs: 1000, maxHeld: 20 },
  { mode: 'collect', maxMs: 8000, maxHeld: 3 },
];
const keep = { maxRevisions: 1000, ttlMs: 3_600_000 };

interface Pending {
  batch: LeasedBatch;
  parts: readonly BufferedPart[];
}

class Run {
  readonly r: () => number;
  t = 0;
  n = 0;
  step = 0;
  outputs = 0;
  readonly rule: TurnRule;
  readonly sessionOf = new Map<string, string>();
  readonly recalledAt = new Map<string, number>();
  readonly edits = new Map<string, Array<{ step: number; text: string }>>();
  readonly emitted = new Map<string, number[]>();
  readonly lastOutput = new Map<string, string>();
  readonly pending: Pending[] = [];
  readonly log: string[] = [];
  readonly found: string[] = [];

  constructor(
    readonly store: Store,
    readonly seed: number,
    readonly covered: Map<RevisionCovered, number>,
  ) {
    this.r = seeded(seed * 7_919 + 13);
    this.rule = RULES[seed % RULES.length] as TurnRule;
  }

  rand(n: number): number {
    return Math.floor(this.r() * n);
  }
  cover(what: RevisionCovered): void {
    this.covered.set(what, (this.covered.get(what) ?? 0) + 1);
  }

  async arrive(): Promise<void> {
    const id = `m${++this.n}`;
    // A message recalled before it came arrives in the recall's conversation.
    const session = this.sessionOf.get(id) ?? (SESSIONS[this.rand(SESSIONS.length)] as string);
    this.sessionOf.set(id, session);
    this.log.push(`${this.step} t=${this.t} arrive ${session} ${id}`);
    await this.store.admit([item(id, { sessionKey: session, at: this.t })], this.t);
  }

  /** A recall or an edit of a message that arrived, or of the next one (a recall before its message). */
  async revise(kind: 'recall' | 'edit'): Promise<void> {
    const early = kind === 'recall' && this.r() < 0.15;
    const id = early ? `m${this.n + 1}` : `m${1 + this.rand(Math.max(1, this.n))}`;
    // Of a message not arrived yet: in the conversation it will arrive in.
    const session = this.sessionOf.get(id) ?? SESSIONS[this.rand(SESSIONS.length)]!;
    this.sessionOf.set(id, session);
    const text = `${id}'${this.step}`;
    const revision =
      kind === 'recall' ? { kind, messageId: id, at: this.t } : { kind, messageId: id, at: this.t, content: text };
    const leased = this.pending.some((p) => p.batch.parts.some((part) => part.event.id === id));
    const done = await this.store.revise(session, [session, turnBufferKey(session)], revision, this.t, keep);
    this.log.push(`${this.step} t=${this.t} ${kind} ${id} -> ${JSON.stringify(done)}`);
    if (!done.recorded) return;
    if (kind === 'edit') {
      this.edits.set(id, [...(this.edits.get(id) ?? []), { step: this.step, text }]);
      return this.cover('edited');
    }
    if (!this.recalledAt.has(id)) this.recalledAt.set(id, this.step);
    if (early && !this.emitted.has(id)) this.cover('recalled-early');
    else if (leased) this.cover('recalled-leased');
    else if (done.buffered) this.cover('recalled-waiting');
  }

  /** The flush's start: take what is due, apply the session's revisions as read now. */
  async start(): Promise<void> {
    for (const batch of await this.store.claimDue(this.t, 500, 10)) {
      const { revisions } = await this.store.conversation(batch.sessionKey, this.t, { context: false });
      const { parts } = revisedParts(batch.parts, revisions);
      this.log.push(
        `${this.step} t=${this.t} start ${batch.debounceKey} [${parts.map((p) => p.event.text).join(' ')}]`,
      );
      this.pending.push({ batch, parts });
    }
  }

  /** The flush's end: commit what the start left (nothing left: closed as context), checked against what was recorded before. */
  async finish(pending: Pending): Promise<void> {
    const { batch, parts } = pending;
    if (parts.length === 0) {
      const kept = await this.store.keepContext(batch, [], this.t, { maxMessages: 10, ttlMs: 60_000 });
      this.log.push(`${this.step} t=${this.t} kept ${batch.debounceKey} -> ${kept}`);
      return;
    }
    const id = `o${this.seed}-${++this.outputs}`;
    const texts = parts.map((part) => part.event.text);
    const draft = {
      id,
      type: 'chat.processedMessage' as const,
      sessionKey: batch.sessionKey,
      channel: 'c',
      createdAt: this.t,
      body: JSON.stringify({ id, texts }),
      state: 'none' as const,
      messageIds: parts.map((part) => part.event.id),
    };
    const done = await this.store.commitTurn(batch, draft, this.t, this.rule);
    this.log.push(
      `${this.step} t=${this.t} commit [${texts.join(' ')}] -> ${done ? (done.held ? 'held' : id) : 'stale'}`,
    );
    if (!done) return this.cover('stale');
    if (done.held) return this.cover('held');
    this.lastOutput.set(batch.sessionKey, id);
    for (const part of parts) {
      const message = part.event.id;
      const recalled = this.recalledAt.get(message);
      if (recalled !== undefined) this.found.push(`${message} emitted at ${this.step}, recalled at ${recalled}`);
      const edits = this.edits.get(message) ?? [];
      const expected = edits.length > 0 ? edits[edits.length - 1]!.text : message;
      if (part.event.text !== expected)
        this.found.push(`${message} emitted as "${part.event.text}", last edit "${expected}"`);
      this.emitted.set(message, [...(this.emitted.get(message) ?? []), this.step]);
    }
  }

  async done(): Promise<void> {
    const session = SESSIONS[this.rand(SESSIONS.length)] as string;
    const output = this.lastOutput.get(session);
    if (output) await this.store.turnDone(output, this.t);
  }

  async run(steps: number): Promise<string[]> {
    for (this.step = 0; this.step < steps; this.step++) {
      const roll = this.r();
      if (roll < 0.35) await this.arrive();
      else if (roll < 0.47) await this.revise('recall');
      else if (roll < 0.57) await this.revise('edit');
      else if (roll < 0.72) await this.start();
      else if (roll < 0.87 && this.pending.length > 0)
        await this.finish(this.pending.splice(this.rand(this.pending.length), 1)[0]!);
      else if (roll < 0.92) await this.done();
      else this.t += [100, 600, 1500][this.rand(3)] as number;
    }
    // Drain: every turn done, every lease run out, everything flushed to the end.
    for (let round = 0; round < 50; round++) {
      for (const output of this.lastOutput.values()) await this.store.turnDone(output, this.t);
      while (this.pending.length > 0) await this.finish(this.pending.shift()!);
      this.t += 2000;
      await this.start();
      if (this.pending.length === 0 && (await this.store.openBuffers()) === 0) break;
    }
    for (let i = 1; i <= this.n; i++) {
      const id = `m${i}`;
      const times = this.emitted.get(id)?.length ?? 0;
      const recalled = this.recalledAt.get(id);
      const first = this.emitted.get(id)?.[0];
      const recalledBefore = recalled !== undefined && (first === undefined || recalled < first);
      if (times > 1) this.found.push(`${id} emitted ${times} times`);
      if (times === 0 && !recalledBefore) this.found.push(`${id} never emitted, never recalled`);
    }
    return this.found;
  }
}

/** Run `sequences` seeded sequences of `steps` steps, each on a fresh store. */
export async function revisionModelCheck(
  open: () => Promise<Store>,
  sequences: number,
  steps: number,
  covered: Map<RevisionCovered, number>,
): Promise<RevisionViolation[]> {
  const violations: RevisionViolation[] = [];
  for (let seed = 1; seed <= sequences; seed++) {
    const store = await open();
    try {
      const run = new Run(store, seed, covered);
      const found = await run.run(steps);
      if (found.length > 0) violations.push({ seed, message: found.join('; '), log: run.log });
    } finally {
      await store.close();
    }
  }
  return violations;
}
