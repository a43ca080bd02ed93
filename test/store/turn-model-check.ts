import { item } from '../../src/testing/index.js';
import {
  isTurnBuffer,
  type LeasedBatch,
  type Store,
  type TurnMode,
  type TurnRule,
} from '../../src/core/ports/index.js';
import { seeded } from '../adapters/fuzz.js';

/**
 * Randomized check of agent turns (docs/turns.md) on a store, in the store model check's style:
 * seeded sequences of arrivals, flushes (some leases kept across other steps, some run out and
 * taken over), dones (the open turn's, a closed one's, an unknown id, two at once), time jumps
 * past maxMs and, for durable stores, restarts that may change the mode; then every turn is
 * done and time runs out. Before them, one scripted interleaving per mode that holds
 * (`lateArrival`). Checked: every message emitted exactly once, each session's messages in
 * arrival order, a link naming an earlier output of the same session, nothing held at the end.
 */
export interface TurnSubject {
  open(): Promise<Store>;
  reopen?(store: Store, now: number): Promise<Store>;
}

export interface TurnViolation {
  seed: number;
  kind: string;
  message: string;
  log: string[];
}
/** What the sequences reached (zero violations mean something only if they reached these). */
export type TurnCovered =
  | 'held'
  | 'released'
  | 'done'
  | 'done-again'
  | 'expired'
  | 'max-held'
  | 'stale-commit'
  | 'restart'
  | 'mode-change'
  | 'during'
  | 'interrupts'
  | 'held-while-off'
  | 'late-arrival';

const MODES: TurnMode[] = ['off', 'collect', 'followup', 'steer', 'interrupt'];
const SESSIONS = ['s1', 's2'];

interface Emitted {
  id: string;
  session: string;
  texts: string[];
  link?: { field: string; id: string };
}

class TurnRun {
  readonly r: () => number;
  store!: Store;
  t = 0;
  n = 0;
  drafts = 0;
  rule!: TurnRule;
  readonly arrivals = new Map<string, string[]>();
  readonly emitted: Emitted[] = [];
  readonly kept: LeasedBatch[] = [];
  readonly log: string[] = [];
  readonly found: Array<{ kind: string; message: string }> = [];

  constructor(
    readonly subject: TurnSubject,
    readonly seed: number,
    readonly covered: Map<TurnCovered, number>,
  ) {
    this.r = seeded(seed * 104_729 + 7);
  }

  rand(n: number): number {
    return Math.floor(this.r() * n);
  }
  pick<T>(values: readonly T[]): T {
    return values[this.rand(values.length)] as T;
  }
  cover(what: TurnCovered): void {
    this.covered.set(what, (this.covered.get(what) ?? 0) + 1);
  }
  viol(kind: string, message: string): void {
    this.found.push({ kind, message });
  }

  pickRule(): TurnRule {
    return { mode: this.pick(MODES), maxMs: this.pick([300, 1000, 3000]), maxHeld: this.pick([2, 3, 20]) };
  }

  async arrive(session = this.pick(SESSIONS)): Promise<void> {
    const text = `m${++this.n}`;
    this.arrivals.set(session, [...(this.arrivals.get(session) ?? []), text]);
    this.log.push(`t=${this.t} arrive ${session} ${text}`);
    await this.store.admit([item(text, { sessionKey: session, at: this.t, closeNow: true })], this.t);
  }

  /** Commit one leased batch under the rule; a stale fence changes nothing. */
  async commit(batch: LeasedBatch): Promise<void> {
    const id = `o${this.seed}-${++this.drafts}`;
    const texts = batch.parts.map((part) => part.event.text);
    const body = JSON.stringify({ type: 'chat.processedMessage', id, texts });
    const done = await this.store.commitTurn(
      batch,
      {
        id,
        type: 'chat.processedMessage',
        sessionKey: batch.sessionKey,
        channel: 'c',
        createdAt: this.t,
        body,
        state: 'none',
        messageIds: texts,
      },
      this.t,
      this.rule,
    );
    this.log.push(
      `t=${this.t} commit ${batch.debounceKey} [${texts.join(' ')}] -> ${done ? (done.held ? `held by ${done.by}` : `${id}${done.link ? ` ${done.link.field} ${done.link.id}` : ''}`) : 'stale'}`,
    );
    if (!done) return this.cover('stale-commit');
    if (done.held) return this.cover(this.rule.mode === 'off' ? 'held-while-off' : 'held');
    if (isTurnBuffer(batch.debounceKey)) this.cover(batch.reason === 'max_held' ? 'max-held' : 'released');
    if (done.link?.field === 'during') this.cover('during');
    if (done.link?.field === 'interrupts') this.cover('interrupts');
    this.emitted.push({ id, session: batch.sessionKey, texts, ...(done.link ? { link: done.link } : {}) });
  }

  /** The scheduler's step: take what is due and commit it, some leases kept for later. */
  async flush(keep: boolean): Promise<void> {
    for (let round = 0; round < 20; round++) {
      const batches = await this.store.claimDue(this.t, 500, 10);
      if (batches.length === 0) return;
      for (const batch of batches) {
        if (keep && this.r() < 0.3) this.kept.push(batch);
        else await this.commit(batch);
      }
    }
  }

  async done(): Promise<void> {
    const session = this.pick(SESSIONS);
    const view = await this.store.turnOf(session, this.t);
    const mine = this.emitted.filter((e) => e.session === session);
    const roll = this.r();
    const id =
      roll < 0.6 && view.outputId
        ? view.outputId
        : roll < 0.85 && mine.length > 0
          ? this.pick(mine).id
          : `nope${this.rand(5)}`;
    const twice = this.r() < 0.2;
    const answers = await Promise.all(
      twice ? [this.store.turnDone(id, this.t), this.store.turnDone(id, this.t)] : [this.store.turnDone(id, this.t)],
    );
    this.log.push(`t=${this.t} done ${id} -> ${answers.map((a) => a.result).join(',')}`);
    const closed = answers.filter((a) => a.result === 'closed').length;
    if (closed > 1) this.viol('done-twice', `two dones of ${id} both closed its turn`);
    if (closed === 1) this.cover('done');
    if (answers.some((a) => a.result === 'already')) this.cover('done-again');
    const known = this.emitted.some((e) => e.id === id);
    if (answers.some((a) => (a.result === 'unknown') === known))
      this.viol('done-answer', `done of ${id} answered ${answers.map((a) => a.result)} (known: ${known})`);
  }

  async restart(): Promise<void> {
    const reopen = this.subject.reopen as NonNullable<TurnSubject['reopen']>;
    this.store = await reopen(this.store, this.t);
    this.cover('restart');
    if (this.r() < 0.5) {
      this.rule = this.pickRule();
      this.cover('mode-change');
    }
    this.log.push(`t=${this.t} restart (rule ${JSON.stringify(this.rule)})`);
  }

  async run(steps: number): Promise<void> {
    this.store = await this.subject.open();
    this.rule = this.pickRule();
    this.log.push(`rule ${JSON.stringify(this.rule)}`);
    for (let i = 0; i < steps; i++) {
      const p = this.r();
      if (p < 0.4) {
        await this.arrive();
        await this.flush(true);
      } else if (p < 0.6) {
        await this.done();
        await this.flush(true);
      } else if (p < 0.8) {
        const step = this.pick([50, 400, 1200, 3500]);
        this.t += step;
        if (step >= 3000) this.cover('expired');
        await this.flush(true);
      } else if (p < 0.9 && this.kept.length > 0) {
        // A kept lease's owner commits late: current if nobody took it over meanwhile, else refused.
        await this.commit(this.kept.splice(this.rand(this.kept.length), 1)[0] as LeasedBatch);
      } else if (this.subject.reopen && p < 0.95) {
        this.kept.length = 0;
        await this.restart();
      }
    }
    await this.finish();
  }

  /**
   * The interleaving of vercel/chat#928, scripted: a message arrives after the flush that
   * releases a session's held messages took them (the holder's last dequeue) and before that
   * flush commits (its release). It must wait for the turn the release opens and go out as soon
   * as that turn is done: never stranded until maxMs, emitted twice, or ahead of the release.
   */
  async lateArrival(mode: 'collect' | 'followup'): Promise<void> {
    this.store = await this.subject.open();
    await this.arriveLate(mode);
    await this.finish();
  }

  private async arriveLate(mode: 'collect' | 'followup'): Promise<void> {
    this.rule = { mode, maxMs: 60_000, maxHeld: 20 };
    this.log.push(`late arrival, rule ${JSON.stringify(this.rule)}`);
    await this.arrive('s1');
    await this.flush(false);
    await this.arrive('s1');
    await this.flush(false);
    const opened = this.emitted[0];
    if (!opened || (await this.store.turnDone(opened.id, this.t)).result !== 'closed')
      return this.viol('late-arrival', 'the first output opened no turn to close');
    // The last dequeue: the held batch is taken, and its commit waits.
    const release = await this.store.claimDue(this.t, 500, 10);
    this.log.push(`t=${this.t} took [${release.map((batch) => batch.debounceKey).join(' ')}]`);
    if (release.length !== 1 || !isTurnBuffer(release[0]!.debounceKey))
      return this.viol('late-arrival', `the done made ${release.length} batch(es) due, not the held one alone`);
    await this.arrive('s1');
    await this.flush(false);
    await this.commit(release[0]!);
    await this.flush(false);
    const releasedAs = this.emitted[1];
    if (!releasedAs || releasedAs.texts.join(' ') !== 'm2')
      return this.viol('late-arrival', `the release emitted [${releasedAs?.texts.join(' ') ?? ''}], not [m2] alone`);
    const late = (await this.store.turnOf('s1', this.t)).held;
    if (late !== 1)
      this.viol('stranded', `the late message is not held for the turn the release opened (held: ${late})`);
    if ((await this.store.turnDone(releasedAs.id, this.t)).result !== 'closed')
      this.viol('late-arrival', `the release's output ${releasedAs.id} opened no turn to close`);
    // Done at this instant: the late message goes out now, not when some later message or maxMs comes.
    await this.flush(false);
    const out = this.emitted[2];
    if (!out || out.texts.join(' ') !== 'm3')
      this.viol(
        'stranded',
        `once the turn it waited for was done, the late message was not emitted (emitted: ${this.emitted.map((e) => `[${e.texts.join(' ')}]`).join(' ')})`,
      );
    else this.cover('late-arrival');
  }

  /** The end: every lease kept runs out, every turn closes, until nothing is left; then the checks. */
  async finish(): Promise<void> {
    this.kept.length = 0;
    for (let round = 0; round < 40 && (await this.store.openBuffers()) > 0; round++) {
      this.t += 3600;
      await this.flush(false);
    }
    await this.check();
    await this.store.close();
  }

  async check(): Promise<void> {
    if ((await this.store.openBuffers()) > 0)
      this.viol('left-held', `${await this.store.openBuffers()} buffer(s) still open at the end`);
    const stored = (await this.store.outboxAfter(0, 10_000)).map(
      (record) => JSON.parse(record.body) as { id: string; texts: string[] } & Record<string, string>,
    );
    if (stored.length !== this.emitted.length)
      this.viol('outbox', `${stored.length} records stored, ${this.emitted.length} emitted`);
    const seen = new Set<string>();
    for (const [session, arrived] of this.arrivals) {
      const mine = this.emitted.filter((e) => e.session === session);
      const texts = mine.flatMap((e) => e.texts);
      if (texts.join(' ') !== arrived.join(' '))
        this.viol('order', `${session}: arrived [${arrived.join(' ')}], emitted [${texts.join(' ')}]`);
      mine.forEach((e, i) => {
        if (e.link && !mine.slice(0, i).some((earlier) => earlier.id === e.link?.id))
          this.viol('link', `${e.id} ${e.link.field} ${e.link.id}, not an earlier output of ${session}`);
      });
    }
    for (const e of this.emitted) {
      for (const text of e.texts) {
        if (seen.has(text)) this.viol('twice', `${text} emitted twice`);
        seen.add(text);
      }
      const record = stored.find((s) => s.id === e.id);
      if (e.link && record?.[e.link.field] !== e.link.id)
        this.viol('body', `${e.id}: the stored body lacks ${e.link.field}`);
      if (!e.link && record && ['followsUp', 'during', 'interrupts'].some((field) => field in record))
        this.viol('body', `${e.id}: a link in the body the commit did not answer`);
    }
  }
}

/** Run `sequences` seeded sequences of `steps` ops; the violations found, each with its op log. */
export async function turnModelCheck(
  subject: TurnSubject,
  sequences: number,
  steps: number,
  covered = new Map<TurnCovered, number>(),
): Promise<TurnViolation[]> {
  const out: TurnViolation[] = [];
  for (const [seed, mode] of [
    [-1, 'collect'],
    [-2, 'followup'],
  ] as const) {
    const run = new TurnRun(subject, seed, covered);
    try {
      await run.lateArrival(mode);
    } catch (error) {
      run.viol('threw', (error as Error).stack ?? String(error));
    }
    for (const found of run.found) out.push({ seed, ...found, log: run.log });
  }
  for (let seed = 1; seed <= sequences; seed++) {
    const run = new TurnRun(subject, seed, covered);
    try {
      await run.run(steps);
    } catch (error) {
      run.viol('threw', (error as Error).stack ?? String(error));
    }
    for (const found of run.found) out.push({ seed, ...found, log: run.log });
  }
  return out;
}
