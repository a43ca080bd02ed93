// The kit as a store author runs it: from the package name, against a Store of their own.
import { describeStoreContract, type Store } from 'agent-intake/testing';
import { MemoryStore } from '../../src/store/local/memory.js';

/** A third-party Store: every role forwards to a MemoryStore it holds. */
class WrappedStore implements Store {
  readonly kind = 'wrapped';
  readonly durable = false;
  readonly shared = false;
  readonly #inner = new MemoryStore();
  admit: Store['admit'] = (items, now) => this.#inner.admit(items, now);
  correlation: Store['correlation'] = (key, now) => this.#inner.correlation(key, now);
  claimDue: Store['claimDue'] = (now, leaseMs, limit) => this.#inner.claimDue(now, leaseMs, limit);
  renewLease: Store['renewLease'] = (batch, now, leaseMs) => this.#inner.renewLease(batch, now, leaseMs);
  release: Store['release'] = (batch, retryAt) => this.#inner.release(batch, retryAt);
  nextDeadline: Store['nextDeadline'] = () => this.#inner.nextDeadline();
  commit: Store['commit'] = (batch, draft, now) => this.#inner.commit(batch, draft, now);
  openBuffers: Store['openBuffers'] = () => this.#inner.openBuffers();
  commitTurn: Store['commitTurn'] = (batch, draft, now, rule) => this.#inner.commitTurn(batch, draft, now, rule);
  turnDone: Store['turnDone'] = (outputId, now) => this.#inner.turnDone(outputId, now);
  turnOf: Store['turnOf'] = (sessionKey, now) => this.#inner.turnOf(sessionKey, now);
  openTurns: Store['openTurns'] = (now, limit) => this.#inner.openTurns(now, limit);
  openTurnCount: Store['openTurnCount'] = (now) => this.#inner.openTurnCount(now);
  conversation: Store['conversation'] = (sessionKey, now) => this.#inner.conversation(sessionKey, now);
  keepContext: Store['keepContext'] = (batch, messages, now, keep) =>
    this.#inner.keepContext(batch, messages, now, keep);
  setActivation: Store['setActivation'] = (sessionKey, override, now) =>
    this.#inner.setActivation(sessionKey, override, now);
  revise: Store['revise'] = (sessionKey, debounceKeys, revision, now, keep) =>
    this.#inner.revise(sessionKey, debounceKeys, revision, now, keep);
  holdTakeover: Store['holdTakeover'] = (sessionKey, at, hold, now) =>
    this.#inner.holdTakeover(sessionKey, at, hold, now);
  endTakeover: Store['endTakeover'] = (sessionKey, now, since) => this.#inner.endTakeover(sessionKey, now, since);
  spendBudgets: Store['spendBudgets'] = (budgets, now) => this.#inner.spendBudgets(budgets, now);
  deferBatch: Store['deferBatch'] = (batch, deferKey, dueAt, now) =>
    this.#inner.deferBatch(batch, deferKey, dueAt, now);
  outboxAfter: Store['outboxAfter'] = (seq, limit) => this.#inner.outboxAfter(seq, limit);
  lastSeq: Store['lastSeq'] = () => this.#inner.lastSeq();
  tail: Store['tail'] = (listener) => this.#inner.tail(listener);
  outboxGet: Store['outboxGet'] = (id) => this.#inner.outboxGet(id);
  trimOutbox: Store['trimOutbox'] = (olderThan, keepCount, keepAfterSeq) =>
    this.#inner.trimOutbox(olderThan, keepCount, keepAfterSeq);
  claimPush: Store['claimPush'] = (now, leaseMs, limit) => this.#inner.claimPush(now, leaseMs, limit);
  ackPush: Store['ackPush'] = (lease, outcome, now) => this.#inner.ackPush(lease, outcome, now);
  nextPushAt: Store['nextPushAt'] = () => this.#inner.nextPushAt();
  deliveryCounts: Store['deliveryCounts'] = () => this.#inner.deliveryCounts();
  deadLetters: Store['deadLetters'] = (limit) => this.#inner.deadLetters(limit);
  requeueDead: Store['requeueDead'] = (id, limit, now) => this.#inner.requeueDead(id, limit, now);
  claimOutputs: Store['claimOutputs'] = (now, leaseMs, limit) => this.#inner.claimOutputs(now, leaseMs, limit);
  extendClaim: Store['extendClaim'] = (lease, leaseUntil, now) => this.#inner.extendClaim(lease, leaseUntil, now);
  claimOf: Store['claimOf'] = (id) => this.#inner.claimOf(id);
  holdLease: Store['holdLease'] = (name, holder, ttlMs, now) => this.#inner.holdLease(name, holder, ttlMs, now);
  dropLease: Store['dropLease'] = (name, holder) => this.#inner.dropLease(name, holder);
  fenceHolds: Store['fenceHolds'] = (name, fence) => this.#inner.fenceHolds(name, fence);
  fencedPut: Store['fencedPut'] = (name, fence, key, value, ttlMs, now) =>
    this.#inner.fencedPut(name, fence, key, value, ttlMs, now);
  sharedGet: Store['sharedGet'] = (name, now) => this.#inner.sharedGet(name, now);
  sharedPut: Store['sharedPut'] = (name, value, ttlMs, now) => this.#inner.sharedPut(name, value, ttlMs, now);
  claimStats: Store['claimStats'] = () => this.#inner.claimStats();
  correlationStats: Store['correlationStats'] = () => this.#inner.correlationStats();
  ping: Store['ping'] = () => this.#inner.ping();
  close: Store['close'] = () => this.#inner.close();
}

describeStoreContract('wrapped', async () => new WrappedStore());
