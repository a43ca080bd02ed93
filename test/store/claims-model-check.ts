import type { ClaimLease, PushOutcome, Store } from '../../src/core/ports/index.js';
import { draft } from '../../src/testing/index.js';
import { commitAll } from '../../src/testing/store/harness.js';
import { seeded } from '../adapters/fuzz.js';

/**
 * Randomized check of claims (contract §15) on a store, in the store model check's style: seeded
 * sequences of commits to a few sessions, claims by several workers (two at once at times),
 * acks, nacks, extends, acks and extends with leases lost, clock jumps past leases and, for a
 * store that has `reopen`, restarts; then time runs on and the workers take everything left.
 * Each answer is checked against a small model of the per-session queues: a claim hands out only
 * its session's head, never while another claim holds it, with the attempt and `expired` the model
 * says; an ack, nack or extend succeeds only with the token that holds the head (an extend only
 * until the lease ran out); at the end every output is delivered exactly once or dead, with the
 * attempts the model counted, in seq order per session.
 */
export interface ClaimsSubject {
  open(): Promise<Store>;
  /** Close the store and open its state again at `now` (a restart). */
  reopen?(store: Store, now: number): Promise<Store>;
  /** Leases live on across `reopen` (Redis); else a restart ends them all (SQLite keeps them in memory). */
  keepsLeases?: boolean;
}

export interface ClaimsViolation {
  seed: number;
  message: string;
  log: string[];
}

/** What the sequences reached (zero violations mean something only if they reached these). */
export type ClaimsCovered =
  | 'claim'
  | 'two-claims-at-once'
  | 'expired'
  | 'ack'
  | 'ack-lost'
  | 'nack'
  | 'dead'
  | 'past-max-attempts'
  | 'extend'
  | 'extend-lost'
  | 'claim-of'
  | 'restart';

/** A worker takes an output this many times at most; the next claim of it makes it dead (the claims stage's rule). */
const MAX_ATTEMPTS = 3;
const SESSIONS = ['a', 'b', 'c'];
const WORKERS = 3;

interface ModelRecord {
  id: string;
  session: string;
  state: 'pending' | 'delivered' | 'dead';
  attempts: number;
  dueAt: number;
}
interface ModelSession {
  /** Pending records in seq order: the first is the head. */
  queue: ModelRecord[];
  lease?: { token: number; until: number };
}

class ClaimsRun {
  private readonly r: () => number;
  private store!: Store;
  private t = 0;
  private n = 0;
  private readonly records = new Map<string, ModelRecord>();
  private readonly sessions = new Map<string, ModelSession>(SESSIONS.map((s) => [s, { queue: [] }]));
  /** The leases each worker was given and has not answered. */
  private readonly held: ClaimLease[][] = Array.from({ length: WORKERS }, () => []);
  /** Per session, the ids finished (delivered or dead), in the order they finished. */
  private readonly finished = new Map<string, string[]>();
  readonly log: string[] = [];
  readonly found: string[] = [];

  constructor(
    private readonly subject: ClaimsSubject,
    readonly seed: number,
    private readonly covered: Map<ClaimsCovered, number>,
  ) {
    this.r = seeded(seed * 7919 + 13);
  }

  private rand(n: number): number {
    return Math.floor(this.r() * n);
  }
  private pick<T>(values: readonly T[]): T {
    return values[this.rand(values.length)] as T;
  }
  private cover(what: ClaimsCovered): void {
    this.covered.set(what, (this.covered.get(what) ?? 0) + 1);
  }
  private check(ok: boolean, message: string): void {
    if (!ok) this.found.push(`t=${this.t} ${message}`);
  }

  private async commit(): Promise<void> {
    const session = this.pick(SESSIONS);
    const id = `r${++this.n}`;
    await commitAll(this.store, [draft(id, 'pending', session, this.t)], this.t);
    const record: ModelRecord = { id, session, state: 'pending', attempts: 0, dueAt: this.t };
    this.records.set(id, record);
    (this.sessions.get(session) as ModelSession).queue.push(record);
    this.log.push(`t=${this.t} commit ${id} to ${session}`);
  }

  /** Sessions whose head a claim may take now: due, and not leased, or leased and run out. */
  private claimable(): string[] {
    return SESSIONS.filter((s) => {
      const { queue, lease } = this.sessions.get(s) as ModelSession;
      const head = queue[0];
      return head !== undefined && (lease ? lease.until <= this.t : head.dueAt <= this.t);
    });
  }

  private async claim(): Promise<void> {
    const leaseMs = this.pick([100, 500]);
    const limits = this.r() < 0.25 ? [this.pick([1, 2]), this.pick([1, 2])] : [this.pick([1, 2, 5])];
    const workers = limits.map(() => this.rand(WORKERS));
    const before = this.claimable();
    const answers = await Promise.all(limits.map((limit) => this.store.claimOutputs(this.t, leaseMs, limit)));
    if (limits.length > 1) this.cover('two-claims-at-once');
    const taken = answers.flat();
    this.log.push(
      `t=${this.t} claim leaseMs ${leaseMs} limits ${limits.join('+')} (claimable ${before.join(',')}) -> ${taken
        .map((l) => `${l.record.id}#${l.record.attempts}${l.expired ? ' expired' : ''} token ${l.token}`)
        .join(', ')}`,
    );
    const total = limits.reduce((sum, limit) => sum + limit, 0);
    this.check(taken.length === Math.min(total, before.length), `claims took ${taken.length} of ${before.length}`);
    const sessions = new Set<string>();
    for (const [i, leases] of answers.entries()) {
      for (const lease of leases) {
        const { id, sessionKey, attempts } = lease.record;
        const model = this.sessions.get(sessionKey);
        const head = model?.queue[0];
        this.check(!sessions.has(sessionKey), `two leases on session ${sessionKey} at once`);
        sessions.add(sessionKey);
        if (!model || head?.id !== id || !before.includes(sessionKey)) {
          this.check(false, `claimed ${id} of ${sessionKey}, not a head the model offers (${head?.id})`);
          continue;
        }
        this.check(attempts === head.attempts + 1, `${id} claimed as attempt ${attempts}, model ${head.attempts + 1}`);
        this.check(lease.expired === (model.lease !== undefined), `${id} expired ${lease.expired}`);
        this.check(lease.leaseUntil === this.t + leaseMs, `${id} leased until ${lease.leaseUntil}`);
        if (lease.expired) this.cover('expired');
        head.attempts++;
        model.lease = { token: lease.token, until: lease.leaseUntil };
        this.cover('claim');
        (this.held[workers[i] as number] as ClaimLease[]).push(lease);
      }
    }
    // The claims stage's rule: a record taken past maxAttempts is dead, not handed to the agent.
    for (const leases of this.held)
      for (const lease of leases.filter((l) => l.record.attempts > MAX_ATTEMPTS)) {
        this.cover('past-max-attempts');
        leases.splice(leases.indexOf(lease), 1);
        const lastError = `lease ran out ${lease.record.attempts - 1} times`;
        await this.answer(lease, { state: 'dead', attempts: lease.record.attempts, lastError });
      }
  }

  /** ackPush as a worker answers, checked against whether its token holds the head now. */
  private async answer(lease: ClaimLease, outcome: PushOutcome): Promise<void> {
    const { id, sessionKey } = lease.record;
    const model = this.sessions.get(sessionKey) as ModelSession;
    const holds = model.lease?.token === lease.token && model.queue[0]?.id === id;
    const acked = await this.store.ackPush(lease, outcome, this.t);
    this.log.push(`t=${this.t} ${outcome.state} ${id} token ${lease.token} -> ${acked}`);
    this.check(acked === holds, `${outcome.state} of ${id} with token ${lease.token} answered ${acked}`);
    if (!acked || !holds) return this.cover('ack-lost');
    const record = model.queue[0] as ModelRecord;
    model.lease = undefined;
    if (outcome.state === 'retry') {
      record.dueAt = outcome.at;
      return this.cover('nack');
    }
    record.state = outcome.state;
    model.queue.shift();
    this.finished.set(sessionKey, [...(this.finished.get(sessionKey) ?? []), id]);
    this.cover(outcome.state === 'dead' ? 'dead' : 'ack');
  }

  /** A worker answers one of its leases: ack, nack (dead past maxAttempts) or extend. */
  private async work(): Promise<void> {
    const leases = this.held[this.rand(WORKERS)] as ClaimLease[];
    if (leases.length === 0) return;
    const lease = leases[this.rand(leases.length)] as ClaimLease;
    const p = this.r();
    if (p < 0.3) return this.extend(lease);
    leases.splice(leases.indexOf(lease), 1);
    const attempts = lease.record.attempts;
    if (p < 0.7) return this.answer(lease, { state: 'delivered', attempts });
    if (attempts >= MAX_ATTEMPTS) return this.answer(lease, { state: 'dead', attempts, lastError: 'nacked' });
    return this.answer(lease, { state: 'retry', attempts, at: this.t + this.pick([0, 50, 300]), lastError: 'nacked' });
  }

  private async extend(lease: ClaimLease): Promise<void> {
    const model = this.sessions.get(lease.record.sessionKey) as ModelSession;
    const current = model.lease;
    const ok = current?.token === lease.token && current.until >= this.t && model.queue[0]?.id === lease.record.id;
    const until = this.t + this.pick([50, 200, 800]);
    const extended = await this.store.extendClaim(lease, until, this.t);
    this.log.push(`t=${this.t} extend ${lease.record.id} token ${lease.token} to ${until} -> ${extended}`);
    this.check(extended === ok, `extend of ${lease.record.id} with token ${lease.token} answered ${extended}`);
    if (!extended || !current || !ok) return this.cover('extend-lost');
    current.until = Math.max(current.until, until);
    this.cover('extend');
  }

  private async claimOf(): Promise<void> {
    const ids = [...this.records.keys()];
    if (ids.length === 0) return;
    const model = this.records.get(this.pick(ids)) as ModelRecord;
    const view = await this.store.claimOf(model.id);
    const session = this.sessions.get(model.session) as ModelSession;
    const lease = session.queue[0] === model ? session.lease : undefined;
    this.check(
      view?.record.state === model.state && view.record.attempts === model.attempts,
      `claimOf ${model.id}: ${view?.record.state} #${view?.record.attempts}, model ${model.state} #${model.attempts}`,
    );
    this.check(
      JSON.stringify(view?.lease) === JSON.stringify(lease && { token: lease.token, leaseUntil: lease.until }),
      `claimOf ${model.id} lease ${JSON.stringify(view?.lease)}, model ${JSON.stringify(lease)}`,
    );
    this.cover('claim-of');
  }

  private async restart(): Promise<void> {
    this.store = await (this.subject.reopen as NonNullable<ClaimsSubject['reopen']>)(this.store, this.t);
    if (!this.subject.keepsLeases) for (const session of this.sessions.values()) session.lease = undefined;
    this.log.push(`t=${this.t} restart`);
    this.cover('restart');
  }

  async run(steps: number): Promise<void> {
    this.store = await this.subject.open();
    try {
      for (let i = 0; i < steps && this.found.length === 0; i++) {
        const p = this.r();
        if (p < 0.2) await this.commit();
        else if (p < 0.45) await this.claim();
        else if (p < 0.75) await this.work();
        else if (p < 0.85) this.t += this.pick([10, 100, 400, 1200]);
        else if (p < 0.95) await this.claimOf();
        else if (this.subject.reopen) await this.restart();
      }
      await this.drain();
    } finally {
      await this.store.close().catch(() => undefined);
    }
  }

  /** Time runs on and the workers deliver everything left; then the store must agree with the model. */
  private async drain(): Promise<void> {
    for (let round = 0; round < 50 && [...this.records.values()].some((r) => r.state === 'pending'); round++) {
      this.t += 500;
      await this.claim();
      for (const leases of this.held)
        for (const lease of leases.splice(0))
          await this.answer(lease, { state: 'delivered', attempts: lease.record.attempts });
    }
    for (const model of this.records.values()) {
      const record = await this.store.outboxGet(model.id);
      this.check(
        record?.state === model.state && model.state !== 'pending' && record.attempts === model.attempts,
        `at the end ${model.id} is ${record?.state} #${record?.attempts}, model ${model.state} #${model.attempts}`,
      );
    }
    const dead = [...this.records.values()].filter((r) => r.state === 'dead').length;
    const counts = await this.store.deliveryCounts();
    this.check(counts.pending === 0 && counts.dead === dead, `counts ${JSON.stringify(counts)}, model dead ${dead}`);
    for (const [session, ids] of this.finished) {
      const committed = [...this.records.values()].filter((r) => r.session === session).map((r) => r.id);
      this.check(ids.join() === committed.join(), `session ${session} finished ${ids.join()} of ${committed.join()}`);
    }
  }
}

/** Run `runs` seeded sequences of `steps` steps each; the violations found (the first of each run, with its log). */
export async function claimsModelCheck(
  subject: ClaimsSubject,
  runs: number,
  steps: number,
  covered: Map<ClaimsCovered, number>,
): Promise<ClaimsViolation[]> {
  const violations: ClaimsViolation[] = [];
  for (let seed = 1; seed <= runs; seed++) {
    const run = new ClaimsRun(subject, seed, covered);
    await run.run(steps);
    if (run.found.length > 0) violations.push({ seed, message: run.found[0] as string, log: run.log });
  }
  return violations;
}
