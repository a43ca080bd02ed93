import type {
  AdmitItem,
  AdmitVerdict,
  BufferRule,
  LeasedBatch,
  OutboxDraft,
  OutboxRecord,
  Store,
} from '../../src/core/ports/index.js';
import { seeded } from '../adapters/fuzz.js';
import { event } from '../../src/testing/index.js';

/**
 * Randomized model-based check of a store: seeded sequences of admits, claims (shutdown ones
 * with now = Infinity, except on a shared store), commits, releases, renewals, takeovers and,
 * for durable stores, restarts, duplicate outbox ids and injected SQLite write failures, against
 * a model that checks exactly-once emission, no lost part, per-session order, stale fences
 * refused and the shutdown rules. Replay one seed with `replaySeed(subject, seed)`; `formatOps`
 * prints its log.
 */

/**
 * The store under test. `reopen` (durable stores) closes one and opens its state at `now`.
 * The optional fields adapt the sequences to a store on a server (Redis); left out, a sequence
 * runs on op times as they are, and the same seed gives the same sequence as ever.
 */
export interface Subject {
  open(): Promise<Store>;
  reopen?(store: Store, now: number, viaOpen: boolean): Promise<Store>;
  /**
   * Several instances share the store (Redis): no sequence asks for a shutdown flush
   * (`claimDue(Infinity, ...)`, one instance's last flush of everything), each drains by
   * stepping time instead; and the store's tail (a blocking read on its own connection,
   * delivered later) is not compared with the commits.
   */
  shared?: boolean;
  /**
   * The clock the store follows, read once the store is open: the store is given that reading
   * plus each op time (the model and the op log keep op times). Redis stamps arrivals with the
   * server's clock and expires keys in real time, so its times must be real ones. @default () => 0
   */
  clock?: () => number;
  /** Time steps, debounce windows and leases are this many times longer (Redis: so a script's round trip is small against them). @default 1 */
  timeScale?: number;
  /**
   * A buffer given back holds its session this long past its retry time (Redis: 30 s, in case
   * its instance died meanwhile); sequences then sometimes jump time past it.
   */
  releaseHoldMs?: number;
}

export interface Item {
  id: string;
  s: string;
  dk: string;
  rule: BufferRule;
  unit: string | undefined;
  closeNow: boolean;
}
type Write = { kind: 'commit'; lease: number } | { kind: 'admit'; items: Item[] };
export type Op =
  | { type: 'admit'; t: number; items: Item[] }
  | { type: 'claim'; t: number; leaseMs: number; limit: number }
  | { type: 'commit'; t: number; lease: number }
  | { type: 'release'; t: number; lease: number; retryAt: number }
  | { type: 'renew'; t: number; lease: number; leaseMs: number }
  | { type: 'dup'; t: number; leases: [number, number]; admit: Item[] | undefined }
  | { type: 'fail'; t: number; failNext: number; writes: Write[] }
  | { type: 'restart'; t: number; open: boolean }
  | { type: 'drainInf' | 'drainStep'; t: number; failP: number; rseed: number }
  | { type: 'final' };

export interface Found {
  kind: string;
  message: string;
  at: number;
}
export interface Violation extends Found {
  seed: number;
  ops: Op[];
  shrunk: boolean;
}

interface Lease {
  idx: number;
  b: LeasedBatch;
  dk: string;
  s: string;
  ids: string[];
  fence: number;
  leaseUntil: number;
  state: 'current' | 'stale' | 'released' | 'committed';
  call: number;
  retryAt?: number;
  afterFailed?: boolean;
}
interface Part extends Item {
  firstClaim: number | null;
  emitted: number;
}
type Commit = OutboxRecord | undefined | Error;

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/** One sequence: executes ops (generated from the seed, or given for a replay) against a store and the model. */
class Run {
  readonly r: () => number;
  store!: Store;
  readonly ops: Op[] = [];
  readonly violations: Found[] = [];
  readonly parts = new Map<string, Part>();
  readonly pending = new Map<string, string[]>();
  readonly rejected = new Set<string>();
  readonly leases: Lease[] = [];
  readonly cur = new Map<string, Lease>();
  readonly retrying = new Map<string, Lease>();
  readonly maxFence = new Map<string, number>();
  readonly committed = new Map<string, string[]>(); // draftId -> ids
  readonly tailIds: string[] = [];
  partN = 0;
  restartClaim = -1;
  claimCalls = 0;
  failNext = 0;
  /** The store's time at op time 0 (`Subject.clock`, read when the store opened). */
  base = 0;
  readonly scale: number;
  /** What the sequence exercised (see `Coverage`). */
  readonly covered = new Map<string, number>();
  sessions: string[] = [];
  keys = new Map<string, string[]>();
  rule = new Map<string, BufferRule>();

  constructor(
    readonly subject: Subject,
    seed: number,
    readonly moreFailures = false,
  ) {
    this.r = seeded(seed * 7919 + 17);
    this.scale = subject.timeScale ?? 1;
  }

  get durable(): boolean {
    return this.subject.reopen !== undefined;
  }
  get shared(): boolean {
    return this.subject.shared === true;
  }
  get holdMs(): number | undefined {
    return this.subject.releaseHoldMs;
  }
  /** The store's time at op time `t`. */
  now(t: number): number {
    return this.base + t;
  }
  rand(n: number): number {
    return Math.floor(this.r() * n);
  }
  pick<T>(a: readonly T[]): T {
    return a[this.rand(a.length)] as T;
  }
  viol(kind: string, message: string): void {
    this.violations.push({ kind, message, at: this.ops.length });
  }
  cover(what: Covered): void {
    this.covered.set(what, (this.covered.get(what) ?? 0) + 1);
  }

  async open(): Promise<void> {
    this.store = await this.subject.open();
    this.base = this.subject.clock?.() ?? 0;
    this.attach();
  }

  /** Tail the store, and (durable) make its write transactions fail at COMMIT while `failNext` > 0. */
  attach(): void {
    if (!this.shared) this.store.tail((rec) => this.tailIds.push(rec.id));
    if (!this.durable) return;
    const store = this.store as unknown as { groupTx?: (body: () => void) => void };
    const real = store.groupTx;
    if (typeof real !== 'function') throw new Error('model-check: no groupTx to inject write failures into');
    store.groupTx = (fn) =>
      real(() => {
        fn();
        if (this.failNext > 0) {
          this.failNext--;
          this.cover('failed-write');
          throw new Error('disk I/O error');
        }
      });
  }

  async close(): Promise<void> {
    await this.store.close().catch(() => undefined);
  }

  // ---------------------------------------------------------------- generation
  rules(): BufferRule {
    const s = this.scale;
    return {
      windowMs: this.pick([0, 5, 20, 50]) * s,
      maxWaitMs: this.pick([10, 40, 100]) * s,
      maxMessages: this.pick([1, 2, 3, 5]),
    };
  }

  genItems(t: number): { type: 'admit'; t: number; items: Item[] } {
    const items: Item[] = [];
    const n = 1 + this.rand(3);
    for (let i = 0; i < n; i++) {
      const s = this.pick(this.sessions);
      const dk = this.pick(this.keys.get(s) ?? []);
      const dup = this.parts.size > 0 && this.r() < 0.05;
      const id = dup ? this.pick([...this.parts.keys()]) : `e${++this.partN}`;
      const rule = this.r() < 0.2 ? this.rules() : (this.rule.get(dk) as BufferRule);
      const album = this.r() < 0.15;
      const count = album ? 2 + this.rand(2) : 1;
      const unit = album ? `u${this.partN}` : undefined;
      const first = dup ? this.parts.get(id) : undefined;
      for (let j = 0; j < count; j++) {
        const pid = j === 0 ? id : `e${++this.partN}`;
        items.push({
          id: pid,
          s: first && j === 0 ? first.s : s,
          dk: first && j === 0 ? first.dk : dk,
          rule,
          unit,
          closeNow: !album && this.r() < 0.1,
        });
      }
    }
    return { type: 'admit', t, items };
  }

  leaseMs(): number {
    return this.pick([30, 80, 200]) * this.scale;
  }

  pickLease(preferCurrent = 0.8): Lease | undefined {
    const live = this.leases.filter((l) => l.state === 'current');
    const stale = this.leases.filter((l) => l.state === 'stale' || l.state === 'released');
    if (live.length && (this.r() < preferCurrent || !stale.length)) return this.pick(live);
    if (stale.length) return this.pick(stale);
    return undefined;
  }

  async generate(): Promise<void> {
    const nS = 2 + this.rand(2);
    this.sessions = Array.from({ length: nS }, (_, i) => `s${i}`);
    this.keys = new Map(
      this.sessions.map((s) => [s, Array.from({ length: 1 + this.rand(3) }, (_, j) => `${s}/k${j}`)]),
    );
    this.rule = new Map([...this.keys.values()].flat().map((dk) => [dk, this.rules()]));
    let t = 1000;
    const len = 20 + this.rand(30);
    for (let i = 0; i < len; i++) {
      let x = this.r();
      if (this.durable && this.moreFailures && this.r() < 0.25) x = 0.91 + this.r() * 0.07;
      let op: Op;
      if (x < 0.28) op = this.genItems(t);
      else if (x < 0.45) {
        t += (1 + this.rand(30)) * this.scale;
        continue;
      } else if (x < 0.48) {
        t += this.holdMs !== undefined && this.r() < 0.3 ? this.holdMs + 10_000 : 250 * this.scale;
        continue;
      } else if (x < 0.66) op = { type: 'claim', t, leaseMs: this.leaseMs(), limit: 1 + this.rand(3) };
      else if (x < 0.8) {
        const l = this.pickLease();
        if (!l) continue;
        op = { type: 'commit', t, lease: l.idx };
      } else if (x < 0.86) {
        const l = this.pickLease();
        if (!l) continue;
        op = { type: 'release', t, lease: l.idx, retryAt: t + this.rand(50) * this.scale };
      } else if (x < 0.91) {
        const l = this.pickLease(0.6);
        if (!l) continue;
        op = { type: 'renew', t, lease: l.idx, leaseMs: this.leaseMs() };
      } else if (!this.durable) continue;
      else if (x < 0.94) {
        const a = this.pickLease(0.9);
        const b = this.pickLease(0.9);
        if (!a || !b || a === b) continue;
        op = { type: 'dup', t, leases: [a.idx, b.idx], admit: this.r() < 0.5 ? this.genItems(t).items : undefined };
      } else if (x < 0.98) {
        const writes: Write[] = [];
        for (let k = 1 + this.rand(3); k > 0; k--) {
          const l = this.r() < 0.5 && this.pickLease(0.9);
          writes.push(l ? { kind: 'commit', lease: l.idx } : { kind: 'admit', items: this.genItems(t).items });
        }
        op = { type: 'fail', t, failNext: 1 + this.rand(3), writes };
      } else op = { type: 'restart', t, open: this.r() < 0.5 };
      await this.exec(op);
    }
    // settle and drain
    const mode = this.shared ? 'step' : this.pick(['inf', 'step']);
    for (const l of this.leases.filter((x) => x.state === 'current')) {
      if (mode === 'inf' || this.r() < 0.7) {
        await this.exec(
          this.r() < 0.75 || mode !== 'inf'
            ? { type: 'commit', t, lease: l.idx }
            : { type: 'release', t, lease: l.idx, retryAt: t + 5 },
        );
      }
    }
    await this.exec({
      type: mode === 'inf' ? 'drainInf' : 'drainStep',
      t,
      failP: mode === 'inf' ? 0.1 : 0.05,
      rseed: this.rand(1e9),
    });
    await this.exec({ type: 'final' });
  }

  // ---------------------------------------------------------------- execution
  async exec(op: Op): Promise<void> {
    this.ops.push(op);
    switch (op.type) {
      case 'admit':
        return this.admit(op.items, op.t);
      case 'claim':
        await this.claim(op.t, op.leaseMs, op.limit);
        return;
      case 'commit': {
        const l = this.leases[op.lease];
        if (l) await this.commit(l, op.t);
        return;
      }
      case 'release': {
        const l = this.leases[op.lease];
        if (l) await this.release(l, op.retryAt);
        return;
      }
      case 'renew': {
        const l = this.leases[op.lease];
        if (l) await this.renew(l, op.t, op.leaseMs);
        return;
      }
      case 'dup':
        return this.dup(op);
      case 'fail':
        return this.fail(op);
      case 'restart':
        return this.restart(op);
      case 'drainInf':
        return this.drainInf(op);
      case 'drainStep':
        return this.drainStep(op);
      case 'final':
        return this.final();
    }
  }

  toAdmit(items: readonly Item[], t: number): AdmitItem[] {
    return items.map((it) => {
      const a: AdmitItem = {
        claims: [{ key: `id:${it.id}`, space: 'id', ttlMs: 1e9, maxKeys: 100000 }],
        part: { debounceKey: it.dk, receivedAt: this.now(t), event: event(it.id, it.s) },
        rule: it.rule,
        closeNow: it.closeNow,
      };
      if (it.unit !== undefined) a.unit = it.unit;
      return a;
    });
  }

  /** Record the verdicts of an admit that resolved. */
  admitted(items: readonly Item[], verdicts: readonly AdmitVerdict[]): void {
    const seen = new Set<string>();
    items.forEach((it, i) => {
      const v = verdicts[i];
      const isNew = !this.parts.has(it.id) && !this.rejected.has(it.id) && !seen.has(it.id);
      seen.add(it.id);
      if (isNew) {
        if (v?.verdict !== 'accepted') return this.viol('admit-refused', `${it.id}: ${JSON.stringify(v)}`);
        this.parts.set(it.id, { ...it, firstClaim: null, emitted: 0 });
        const list = this.pending.get(it.dk) ?? [];
        list.push(it.id);
        this.pending.set(it.dk, list);
      } else if (v?.verdict !== 'claimed' && !this.rejected.has(it.id))
        this.viol('dup-admitted', `${it.id}: ${JSON.stringify(v)}`);
    });
  }

  async admit(items: readonly Item[], t: number): Promise<void> {
    this.admitted(items, await this.store.admit(this.toAdmit(items, t), this.now(t)));
  }

  heldSessions(): Set<string> {
    return new Set([...this.cur.values(), ...this.retrying.values()].map((l) => l.s));
  }

  async claim(t: number, leaseMs: number, limit: number): Promise<LeasedBatch[]> {
    const heldBefore = this.heldSessions();
    if (this.holdRanOut(t)) this.cover('hold-ran-out');
    const batches = await this.store.claimDue(this.now(t), leaseMs, limit);
    this.checkBatches(batches, t, false, heldBefore);
    return batches;
  }

  /** A buffer given back waits past its retry time and hold, while another of its session has parts waiting. */
  holdRanOut(t: number): boolean {
    const hold = this.holdMs;
    if (hold === undefined) return false;
    return [...this.retrying.values()].some(
      (l) =>
        l.retryAt !== undefined &&
        t > l.retryAt + hold &&
        [...this.pending].some(([dk, ids]) => dk !== l.dk && ids.some((id) => this.parts.get(id)?.s === l.s)),
    );
  }

  checkBatches(batches: readonly LeasedBatch[], now: number, shutdown: boolean, heldBefore: Set<string>): Lease[] {
    const call = ++this.claimCalls;
    const closed = new Map<string, 'held' | 'cut'>(); // session -> a shutdown call takes no more of it
    const out: Lease[] = [];
    for (const b of batches) {
      const dk = b.debounceKey;
      const s = b.sessionKey;
      const ids = b.parts.map((p) => p.event.id);
      const tag = `claim@${now} ${dk} fence=${b.fence} [${ids}] reason=${b.reason}`;
      if (ids.length === 0) this.viol('empty-batch', tag);
      const prev = this.cur.get(dk);
      if (prev) {
        if (shutdown) this.viol('shutdown-took-leased', `${tag} while lease #${prev.idx} held`);
        else if (prev.leaseUntil > now)
          this.viol('double-lease', `${tag} while lease #${prev.idx} until ${prev.leaseUntil}`);
        else if (b.reason !== 'takeover') this.viol('takeover-reason', tag);
        else this.cover('takeover');
        prev.state = 'stale';
        this.cur.delete(dk);
      }
      const wasRetry = this.retrying.get(dk);
      this.retrying.delete(dk);
      // session: one at a time outside shutdown; a held session gives only its held buffer
      for (const [dk2, l2] of this.cur) {
        if (l2.s !== s || dk2 === dk || l2.call === call) continue;
        if (shutdown) this.viol('shutdown-session-held', `${tag} while ${dk2} lease #${l2.idx} held`);
        else if (l2.leaseUntil > now)
          this.viol('session-double-lease', `${tag} while ${dk2} lease #${l2.idx} until ${l2.leaseUntil}`);
        else
          this.viol(
            'session-overtakes-expired-lease',
            `${tag} while ${dk2} lease #${l2.idx} expired at ${l2.leaseUntil}, not taken over`,
          );
      }
      for (const [dk2, l2] of this.retrying) {
        if (l2.s !== s || dk2 === dk) continue;
        const holdOut =
          this.holdMs !== undefined && l2.retryAt !== undefined && now > l2.retryAt + this.holdMs
            ? ` (its hold of ${this.holdMs} ms past the retry ran out)`
            : '';
        this.viol(
          'session-overtakes-retry',
          `${tag} while ${dk2} (lease #${l2.idx}) waits for retry at ${l2.retryAt}${holdOut}`,
        );
      }
      const pend = this.pending.get(dk) ?? [];
      if (shutdown) {
        const was = closed.get(s);
        if (was)
          this.viol(was === 'cut' ? 'shutdown-after-cut' : 'shutdown-held-session-not-alone', `${tag} after ${was}`);
        else if (heldBefore.has(s) && !wasRetry)
          this.viol('shutdown-held-session-not-alone', `${tag} (not the held buffer)`);
        if (heldBefore.has(s)) closed.set(s, 'held');
        else if (ids.length < pend.length) closed.set(s, 'cut');
      }
      if (ids.join() !== pend.slice(0, ids.length).join()) {
        const why = ids.map((id) =>
          this.rejected.has(id)
            ? `${id}(rejected admit)`
            : !this.parts.has(id)
              ? `${id}(unknown)`
              : this.parts.get(id)?.emitted
                ? `${id}(emitted)`
                : id,
        );
        this.viol('batch-not-prefix', `${tag}: got [${why}], pending [${pend}]`);
      }
      ids.forEach((id, i) => {
        if (i < ids.length - 1 && this.parts.get(id)?.closeNow) this.viol('command-not-last', tag);
      });
      if (b.fence <= (this.maxFence.get(dk) ?? -Infinity)) this.viol('fence-not-increasing', tag);
      this.maxFence.set(dk, b.fence);
      const idx = this.leases.length;
      for (const id of ids) {
        const p = this.parts.get(id);
        if (p && p.firstClaim === null) p.firstClaim = idx;
      }
      const l: Lease = {
        idx,
        b,
        dk,
        s,
        ids,
        fence: b.fence,
        leaseUntil: b.leaseUntil - this.base,
        state: 'current',
        call,
      };
      this.leases.push(l);
      this.cur.set(dk, l);
      out.push(l);
    }
    return out;
  }

  draft(l: Lease, t: number, id: string): OutboxDraft {
    return {
      id,
      type: 'chat.processedMessage',
      sessionKey: l.s,
      channel: 'c',
      createdAt: t === Infinity ? 0 : Math.floor(t),
      body: JSON.stringify({ lease: l.idx }),
      state: l.idx % 3 === 0 ? 'pending' : 'none',
      messageIds: l.ids,
    };
  }

  /** Apply the outcome of a commit: `rec` a record, undefined (refused), or an Error (rejected). */
  async settleCommit(l: Lease, draftId: string, rec: Commit, before: number | undefined): Promise<void> {
    const current = l.state === 'current';
    if (rec instanceof Error) {
      // rejected: nothing emitted; the lease is expected to be kept (see 402b937)
      if (await this.store.outboxGet(draftId)) this.viol('rejected-commit-emitted', `lease #${l.idx} ${draftId}`);
      return;
    }
    if (rec && !current)
      return this.viol(
        'stale-commit-accepted',
        `lease #${l.idx} (${l.state}) fence=${l.fence} ${l.dk} -> seq ${rec.seq}`,
      );
    if (!rec && current)
      return this.viol(
        'current-commit-refused',
        `lease #${l.idx} fence=${l.fence} ${l.dk}${l.afterFailed ? ' (after a rejected commit)' : ''}`,
      );
    if (!rec) {
      this.cover('stale-commit-refused');
      if (before !== undefined) {
        const after = await this.store.lastSeq();
        if (after !== before) this.viol('stale-commit-changed-outbox', `lease #${l.idx} lastSeq ${before} -> ${after}`);
      }
      if ((await this.store.outboxGet(draftId)) && !this.committed.has(draftId))
        this.viol('stale-commit-emitted', `lease #${l.idx} ${draftId}`);
      return;
    }
    if (rec.id !== draftId) this.viol('commit-wrong-id', `${rec.id} != ${draftId}`);
    this.cover(l.ids.length > 1 ? 'merged-commit' : 'commit');
    this.committed.set(draftId, l.ids);
    const pend = this.pending.get(l.dk) ?? [];
    if (pend.slice(0, l.ids.length).join() !== l.ids.join())
      this.viol('commit-not-prefix', `lease #${l.idx} [${l.ids}] pending [${pend}]`);
    for (const id of l.ids) {
      const p = this.parts.get(id);
      if (!p) {
        this.viol('emitted-unknown', id);
        continue;
      }
      if (p.emitted++) this.viol('double-emit', `${id} by lease #${l.idx}`);
    }
    // order: no part of another buffer of the session first claimed before this batch (its
    // oldest part's first claim) is still waiting
    const mine = Math.min(...l.ids.map((id) => this.parts.get(id)?.firstClaim ?? l.idx));
    for (const [dk2, list] of this.pending) {
      if (dk2 === l.dk) continue;
      for (const id of list) {
        const p = this.parts.get(id) as Part;
        if (p.s === l.s && p.firstClaim !== null && p.firstClaim < mine) {
          const across = p.firstClaim <= this.restartClaim ? ' (claimed before a restart)' : '';
          this.viol(
            across ? 'commit-order-across-restart' : 'commit-order',
            `lease #${l.idx} ${l.dk} [${l.ids}] committed while ${id} of ${dk2}, first claimed by lease #${p.firstClaim}, still waits${across}`,
          );
          break;
        }
      }
    }
    this.pending.set(
      l.dk,
      pend.filter((id) => !l.ids.includes(id)),
    );
    l.state = 'committed';
    if (this.cur.get(l.dk) === l) this.cur.delete(l.dk);
  }

  async commit(l: Lease, t: number): Promise<void> {
    if (l.state === 'committed') return;
    const draftId = `d${l.idx}`;
    const before = l.state !== 'current' ? await this.store.lastSeq() : undefined;
    const rec: Commit = await this.store.commit(l.b, this.draft(l, this.now(t), draftId), this.now(t)).catch(asError);
    if (rec instanceof Error) this.viol('commit-threw', rec.message);
    await this.settleCommit(l, draftId, rec, before);
  }

  async release(l: Lease, retryAt: number): Promise<void> {
    await this.store.release(l.b, this.now(retryAt));
    if (l.state !== 'current') return;
    l.state = 'released';
    l.retryAt = retryAt;
    this.cur.delete(l.dk);
    // One retry per session: a buffer given back while another of its session already waits
    // for its retry waits plain behind it, holding nothing (buffers.ts release).
    if ([...this.retrying.values()].some((r) => r.s === l.s)) return;
    this.retrying.set(l.dk, l);
  }

  async renew(l: Lease, t: number, leaseMs: number): Promise<void> {
    const ok = await this.store.renewLease(l.b, this.now(t), leaseMs);
    const current = l.state === 'current';
    if (ok !== current)
      this.viol(
        current ? 'current-renew-refused' : 'stale-renew-accepted',
        `lease #${l.idx} (${l.state}) fence=${l.fence} ${l.dk}`,
      );
    if (ok && current) l.leaseUntil = t + leaseMs;
  }

  /** Two commits with one outbox id in one turn (SQLite): the group fails, each is tried alone. */
  async dup(op: Extract<Op, { type: 'dup' }>): Promise<void> {
    const [a, b] = op.leases.map((i) => this.leases[i]);
    if (!a || !b || a.state === 'committed' || b.state === 'committed') return;
    if (a.dk === b.dk && a.state === 'current' && b.state === 'current') return;
    const id = `dup${a.idx}`;
    if (this.committed.has(id)) return;
    const ls = [a, b];
    const states = ls.map((l) => l.state);
    const now = this.now(op.t);
    const admitCall = op.admit ? this.store.admit(this.toAdmit(op.admit, op.t), now).catch(asError) : undefined;
    const results: Commit[] = await Promise.all(
      ls.map((l) => this.store.commit(l.b, this.draft(l, now, id), now).catch(asError)),
    );
    const av = await admitCall;
    if (op.admit && av) {
      if (av instanceof Error) this.viol('admit-rejected', av.message);
      else this.admitted(op.admit, av);
    }
    // the first current one (in call order) wins; a second current one is refused by the constraint
    let won = false;
    for (let i = 0; i < 2; i++) {
      const l = ls[i] as Lease;
      const r = results[i];
      if (states[i] === 'current' && !won) {
        won = true;
        if (r instanceof Error) this.viol('dup-first-rejected', r.message);
        await this.settleCommit(l, id, r, undefined);
      } else if (states[i] === 'current') {
        if (!(r instanceof Error)) this.viol('dup-second-not-rejected', `lease #${l.idx} -> ${JSON.stringify(r?.seq)}`);
        else {
          l.afterFailed = true;
          this.cover('duplicate-id-refused');
        }
      } else if (r !== undefined)
        this.viol(
          r instanceof Error ? 'dup-stale-rejected' : 'stale-commit-accepted',
          `lease #${l.idx} ${r instanceof Error ? r.message : r.seq}`,
        );
    }
  }

  /** Writes of one turn whose transaction fails at COMMIT `failNext` times (SQLite). */
  async fail(op: Extract<Op, { type: 'fail' }>): Promise<void> {
    this.failNext = op.failNext;
    type Result = { kind: 'admit'; r: AdmitVerdict[] | Error } | { kind: 'commit'; r: Commit } | { kind: 'skip' };
    const now = this.now(op.t);
    const calls = op.writes.map((w, i): Promise<Result> => {
      if (w.kind === 'admit')
        return this.store.admit(this.toAdmit(w.items, op.t), now).then(
          (r) => ({ kind: 'admit', r }),
          (e: unknown) => ({ kind: 'admit', r: asError(e) }),
        );
      const l = this.leases[w.lease];
      if (!l || l.state === 'committed') return Promise.resolve({ kind: 'skip' });
      return this.store.commit(l.b, this.draft(l, now, `f${op.t}-${l.idx}-${i}`), now).then(
        (r) => ({ kind: 'commit', r }),
        (e: unknown) => ({ kind: 'commit', r: asError(e) }),
      );
    });
    const before = op.writes.map((w) => w.kind === 'commit' && this.leases[w.lease]?.state);
    const results = await Promise.all(calls);
    this.failNext = 0;
    // admits resolve (and apply) before the commits of their turn
    op.writes.forEach((w, i) => {
      const res = results[i];
      if (w.kind !== 'admit' || res?.kind !== 'admit') return;
      if (res.r instanceof Error) {
        for (const it of w.items) if (!this.parts.has(it.id)) this.rejected.add(it.id);
      } else this.admitted(w.items, res.r);
    });
    for (const [i, w] of op.writes.entries()) {
      const res = results[i];
      if (w.kind !== 'commit' || res?.kind !== 'commit') continue;
      const l = this.leases[w.lease] as Lease;
      if (l.state === 'committed') continue; // the same lease twice in one turn: the second is stale
      const r = res.r;
      if (r instanceof Error && l.state === 'current') l.afterFailed = true;
      if (r instanceof Error && before[i] !== 'current') continue; // a failed COMMIT fails a no-op write too
      await this.settleCommit(l, `f${op.t}-${l.idx}-${i}`, r, undefined);
    }
  }

  async restart(op: Extract<Op, { type: 'restart' }>): Promise<void> {
    const reopen = this.subject.reopen;
    if (!reopen) return;
    this.store = await reopen(this.store, this.now(op.t), op.open);
    this.cover('restart');
    this.attach();
    for (const l of this.cur.values()) l.state = 'stale';
    this.cur.clear();
    for (const l of this.retrying.values()) l.state = 'stale';
    this.retrying.clear();
    this.restartClaim = this.leases.length - 1;
    for (const list of this.pending.values()) for (const id of list) (this.parts.get(id) as Part).firstClaim = null;
  }

  pendingCount(): number {
    let n = 0;
    for (const l of this.pending.values()) n += l.length;
    return n;
  }
  pendingLeft(): string {
    return JSON.stringify([...this.pending].filter(([, v]) => v.length));
  }

  async drainInf(op: Extract<Op, { type: 'drainInf' | 'drainStep' }>): Promise<void> {
    const r = seeded(op.rseed);
    for (let round = 0; round < 200; round++) {
      const heldBefore = this.heldSessions();
      const batches = await this.store.claimDue(Infinity, 100, 1 + Math.floor(r() * 4));
      const ls = this.checkBatches(batches, Infinity, true, heldBefore);
      if (ls.length > 0) this.cover('shutdown-claim');
      if (ls.length === 0) {
        const retrying = [...this.retrying.values()];
        const multi = retrying.some((l) => retrying.filter((x) => x.s === l.s).length > 1);
        if (this.pendingCount() > 0)
          this.viol(
            this.cur.size
              ? 'drain-waits-for-lease(expected)'
              : multi
                ? 'drain-stuck-two-retrying-in-session'
                : 'drain-stuck',
            `shutdown claim took nothing; pending ${this.pendingLeft()}, retrying ${[...this.retrying.keys()]}, leased ${[...this.cur.keys()]}`,
          );
        return;
      }
      const sessions = new Map<string, Lease[]>();
      for (const l of ls) sessions.set(l.s, [...(sessions.get(l.s) ?? []), l]);
      for (const queue of sessions.values()) {
        for (const [i, l] of queue.entries()) {
          if (r() < op.failP) {
            for (const left of queue.slice(i)) await this.release(left, op.t);
            break;
          }
          await this.commit(l, op.t);
        }
      }
    }
    this.viol('drain-endless', 'over 200 rounds');
  }

  async drainStep(op: Extract<Op, { type: 'drainInf' | 'drainStep' }>): Promise<void> {
    const r = seeded(op.rseed);
    let t = op.t;
    for (let round = 0; round < 400; round++) {
      t += 250 * this.scale;
      const batches = await this.claim(t, 100 * this.scale, 5);
      for (const l of this.leases.slice(this.leases.length - batches.length)) {
        if (r() < op.failP) await this.release(l, t + 10);
        else await this.commit(l, t);
      }
      if (batches.length === 0 && this.pendingCount() === 0 && this.cur.size === 0) return;
      if (batches.length === 0 && round > 40) {
        this.viol('drain-stuck', `nothing due at ${t}; pending ${this.pendingLeft()}`);
        return;
      }
    }
    this.viol('drain-endless', 'over 400 rounds');
  }

  async final(): Promise<void> {
    if (this.pendingCount() > 0) this.viol('not-emitted', this.pendingLeft());
    const records = await this.store.outboxAfter(0, 1e6);
    const seen = new Map<string, number>();
    for (const rec of records) {
      if (!this.committed.has(rec.id)) this.viol('outbox-unexpected-record', `${rec.id} [${rec.messageIds}]`);
      for (const id of rec.messageIds ?? []) seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    for (const id of this.committed.keys())
      if (!records.some((r) => r.id === id)) this.viol('outbox-missing-record', id);
    for (const id of this.parts.keys())
      if (seen.get(id) !== 1) this.viol('outbox-part-count', `${id} x${seen.get(id) ?? 0}`);
    for (const id of this.rejected) if (seen.has(id)) this.viol('rejected-part-emitted', id);
    if (!this.shared) {
      const tail = [...this.tailIds].sort().join();
      const want = [...this.committed.keys()].sort().join();
      if (tail !== want) this.viol('tail-mismatch', `tail ${this.tailIds} vs committed ${[...this.committed.keys()]}`);
    }
    const deadline = await this.store.nextDeadline();
    if (deadline !== undefined && this.cur.size === 0) this.viol('deadline-left', String(deadline));
    const open = await this.store.openBuffers();
    if (open !== 0) this.viol('buffers-left', String(open));
  }
}

/** What a sequence can exercise; counted per run so a test can tell the check reached it. */
export type Covered =
  | 'commit'
  | 'merged-commit'
  | 'stale-commit-refused'
  | 'takeover'
  | 'shutdown-claim'
  | 'restart'
  | 'failed-write'
  | 'duplicate-id-refused'
  /** A claim while a buffer given back held its session past its retry and `Subject.releaseHoldMs`, and another buffer of that session had parts waiting. */
  | 'hold-ran-out';

export interface Options {
  /** Bias generation toward injected write failures, duplicate ids and restarts (durable stores). */
  moreFailures?: boolean;
  /** Filled with how often each `Covered` thing happened over all sequences. */
  coverage?: Map<Covered, number>;
  /** Milliseconds to spend shrinking op logs of violations, first found first (0: none). @default 5000 */
  shrinkMs?: number;
}

/** Run one sequence: generated from `seed`, or the given op log. */
async function runOne(subject: Subject, seed: number, ops: Op[] | undefined, options: Options): Promise<Run> {
  const run = new Run(subject, seed, options.moreFailures);
  try {
    await run.open();
    if (ops) for (const op of ops) await run.exec(op);
    else await run.generate();
  } catch (e) {
    run.viol('exception', asError(e).stack?.split('\n').slice(0, 3).join(' | ') ?? String(e));
  } finally {
    if (run.store) await run.close();
  }
  return run;
}

/** The op log and violations of one seed. */
export async function replaySeed(
  subject: Subject,
  seed: number,
  options: Options = {},
): Promise<{ ops: Op[]; violations: Found[] }> {
  const run = await runOne(subject, seed, undefined, options);
  return { ops: run.ops, violations: run.violations };
}

/** The violations of a given op log (a shrunk one, say). */
export async function replayOps(subject: Subject, ops: Op[]): Promise<Found[]> {
  return (await runOne(subject, 0, ops, {})).violations;
}

/** Greedy shrink: drop chunks of ops while a violation of `kind` still shows up, until `deadline`. */
async function shrink(
  subject: Subject,
  ops: Op[],
  kind: string,
  deadline: number,
): Promise<{ ops: Op[]; found: Found | undefined }> {
  let best = ops;
  let found: Found | undefined;
  for (let chunk = Math.max(1, best.length >> 1); chunk >= 1; chunk >>= 1) {
    for (let i = 0; i < best.length;) {
      if (Date.now() > deadline) return { ops: best, found };
      if (best[i]?.type === 'final') {
        i++;
        continue;
      }
      const trial = [...best.slice(0, i), ...best.slice(i + chunk)];
      const hit = (await replayOps(subject, trial)).find((v) => v.kind === kind);
      if (hit) {
        best = trial;
        found = hit;
      } else i += chunk;
    }
  }
  return { ops: best, found };
}

/**
 * Check `sequences` seeded sequences from `firstSeed`. Returns the first violation of each
 * kind in each sequence, with the sequence's op log (shrunk within `options.shrinkMs`).
 */
export async function modelCheck(
  subject: Subject,
  sequences: number,
  firstSeed: number,
  options: Options = {},
): Promise<Violation[]> {
  const out: Violation[] = [];
  for (let seed = firstSeed; seed < firstSeed + sequences; seed++) {
    const run = await runOne(subject, seed, undefined, options);
    for (const [what, n] of run.covered)
      options.coverage?.set(what as Covered, (options.coverage.get(what as Covered) ?? 0) + n);
    const kinds = new Set<string>();
    for (const v of run.violations) {
      if (kinds.has(v.kind)) continue;
      kinds.add(v.kind);
      out.push({ ...v, seed, ops: run.ops, shrunk: false });
    }
  }
  const deadline = Date.now() + (options.shrinkMs ?? 5000);
  for (const [i, v] of out.entries()) {
    if (Date.now() > deadline) break;
    const { ops, found } = await shrink(subject, v.ops, v.kind, deadline);
    if (found) out[i] = { ...found, seed: v.seed, ops, shrunk: true };
  }
  return out;
}

const fmt = (op: Op): string =>
  JSON.stringify(op, (k, v: unknown) => {
    if (k !== 'rule') return v;
    const r = v as BufferRule;
    return `${r.windowMs}/${r.maxWaitMs}/${r.maxMessages}`;
  });

/** An op log, one numbered op a line (rules as window/maxWait/maxMessages). */
export function formatOps(ops: readonly Op[]): string {
  return ops.map((op, i) => `  ${i + 1}. ${fmt(op)}`).join('\n');
}

/** One violation, for a failure message. */
export function describeViolation(v: Violation): string {
  return `seed ${v.seed}: ${v.kind} @op ${v.at}: ${v.message}\n${v.shrunk ? 'shrunk ' : ''}op log (${v.ops.length} ops):\n${formatOps(v.ops)}`;
}
