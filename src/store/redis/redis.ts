import { nanoid } from 'nanoid';
import { type OutboxLife, type OutboxRecord } from '../../core/ports/index.js';
import { type CorrelationRecord } from '../../events/inbound.js';
import { admitArgs, clock, correlationOf, redacted, unavailable, verdictsOf } from './codec.js';
import {
  backgroundOptions,
  connect,
  type ConnectionLogger,
  ingestOptions,
  isClusterUrl,
  type ScriptedRedis,
} from './connections.js';
import { RedisBuffers } from './buffers.js';
import { RedisBudgets } from './budgets.js';
import { RedisConversations } from './conversations.js';
import { CommitBatcher } from './commits.js';
import { ReplicaWaits } from './replicas.js';
import { RedisBus } from './bus.js';
import { RedisPushQueue } from './push.js';
import { RedisClaims } from './claims.js';
import { RedisOutbox } from './outbox.js';
import { StoreIdentity } from './identity.js';
import { admitReply } from './replies.js';
import { OutboxTail } from './tail.js';
import { RedisStats } from './stats.js';
import { RedisTrail } from './trail.js';
import { RedisTurns } from './turns.js';
import { ServerWatch } from './watch.js';
import type { RedisStoreOptions } from './options.js';
import type {
  AdmitItem,
  AdmitVerdict,
  ClaimStats,
  Store,
  StoreHealth,
  TrailLog,
  TrailLogOptions,
} from '../../core/ports/index.js';

export type { RedisStoreOptions } from './options.js';

/*
 * Keys: all under `{<keyPrefix>}:` (one Cluster slot), listed in lua/include/prelude.lua.
 *
 * Durability: "resolves once durable" holds as far as the server's settings promise. With
 * AOF `everysec` a host crash can lose the last second of acknowledged admissions; use
 * `appendfsync always`, or a replica with `waitReplicas: 1` (one WAIT per connection per tick,
 * admit and commit fail when the replica did not acknowledge; the write itself stays on the
 * primary, so the platform's retry is then refused as a duplicate).
 */

/**
 * Shared store on Redis >= 7: several instances admit, flush and push through one server.
 * Every step is one Lua script on keys under one hash tag (Redis Cluster keeps them in one
 * slot). Admission stamps arrivals and deadlines with the server's clock (`TIME`), and the
 * flush takes and renews its leases by that clock too, so an instance's clock skew neither
 * flushes buffers early nor takes a live lease over. Push schedules use the `now` callers
 * pass (instance clocks should agree to well within a lease: NTP); the fences make every
 * hand-over exact whatever the clocks say.
 */
export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly durable = true;
  readonly shared = true;
  private readonly prefix: string;
  private readonly callerClock: boolean;
  private readonly clustered: boolean;
  private readonly maxGroups: number;
  private readonly commandTimeoutMs: number;
  /** Webhook admission and readiness: fails fast while Redis is away. */
  private readonly ingest: ScriptedRedis;
  /** Flush, push, outbox reads: retries across short outages. */
  private readonly background: ScriptedRedis;
  private readonly tailer: OutboxTail;
  /** Whether the server still holds what this instance saw (a reset or a lagging failover moves the seq back). */
  private readonly identity: StoreIdentity;
  private readonly watch: ServerWatch;
  /** Connections and actions between instances, and named leases. */
  readonly bus: RedisBus;
  private readonly replicas: ReplicaWaits;
  private readonly turns: RedisTurns;
  private readonly buffers: RedisBuffers;
  private readonly logger: ConnectionLogger | undefined;
  private readonly claimSpaces = new Set<string>();
  /** Claim tokens: this store's own prefix and a count. */
  private readonly claimPrefix = `${nanoid(10)}:`;
  private readonly stats: RedisStats;
  private trail: RedisTrail | undefined; // the verdict trail of every instance (trail.ts), opened once
  private readonly commits: CommitBatcher;
  /** Where a commit whose answer was lost is looked for (this outbox, or a shard's and the global one). */
  private readonly recorded: (id: string) => Promise<OutboxRecord | undefined>;
  private readonly push: RedisPushQueue;
  private readonly claims: RedisClaims;
  private readonly outbox: RedisOutbox;
  private readonly conversations: RedisConversations;
  private readonly budgets: RedisBudgets;

  private constructor(
    private readonly url: string,
    options: RedisStoreOptions,
  ) {
    this.prefix = `{${options.keyPrefix ?? 'ai'}}:`;
    this.callerClock = options.clock === 'caller';
    this.clustered = isClusterUrl(url);
    this.maxGroups = options.maxCorrelationGroups ?? 4096;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 1000;
    this.replicas = new ReplicaWaits(options.waitReplicas ?? 0, this.commandTimeoutMs);
    this.logger = options.logger;
    const set = options.shard ? 'shard' : 'whole';
    this.recorded = options.shard?.recorded ?? ((id) => this.outboxGet(id));
    this.ingest = connect(url, 'ingest', ingestOptions(this.commandTimeoutMs), options.logger, set);
    this.background = connect(url, 'background', backgroundOptions(this.commandTimeoutMs), options.logger, set);
    this.identity = new StoreIdentity(this.prefix, options.logger, options.shard);
    this.tailer = new OutboxTail(url, this.prefix, this.identity, options.logger, options.tailCheckMs);
    this.watch = new ServerWatch(this.background, this.identity, options.logger);
    this.bus = new RedisBus(url, this.prefix, this.background, options.logger);
    this.stats = new RedisStats(this.background, this.prefix, this.claimSpaces);
    this.commits = new CommitBatcher(this.background, this.prefix);
    this.push = new RedisPushQueue(this.background, this.prefix);
    this.claims = new RedisClaims(this.background, this.prefix);
    this.conversations = new RedisConversations(this.background, this.prefix, this.callerClock);
    this.budgets = new RedisBudgets(this.background, this.prefix, this.callerClock);
    this.outbox = new RedisOutbox(
      this.background,
      this.prefix,
      this.tailer,
      this.identity,
      this.callerClock,
      this.claimPrefix,
    );
    this.turns = new RedisTurns(
      this.background,
      this.prefix,
      options.logger,
      () => this.tailer.ready,
      (id) => this.recorded(id),
      () => this.replicas.held(this.background),
    );
    this.buffers = new RedisBuffers({
      redis: this.background,
      prefix: this.prefix,
      callerClock: this.callerClock,
      claimPrefix: this.claimPrefix,
      tailer: this.tailer,
      identity: this.identity,
      commits: this.commits,
      replicas: this.replicas,
      turns: this.turns,
      recorded: (id) => this.recorded(id),
      logger: this.logger,
    });
  }

  /** Connect to `redis://[:password@]host:port[/db]` (or `rediss://`) and check the server's settings. */
  static async open(url: string, options: RedisStoreOptions = {}): Promise<RedisStore> {
    const store = new RedisStore(url, options);
    let first: Error | undefined; // `connect` rejects with "Connection is closed"; the socket's first error says why
    const why = (error: Error) => {
      first ??= error;
    };
    try {
      await Promise.all([store.ingest.once('error', why).connect(), store.background.connect()]);
    } catch (error) {
      store.ingest.disconnect();
      store.background.disconnect();
      throw unavailable(`cannot connect to ${redacted(url)}`, first ?? error);
    }
    await store.watch.atOpen().catch(async (error: unknown) => {
      await store.close();
      throw unavailable(`cannot read the store's epoch on ${redacted(url)}`, error);
    });
    return store;
  }

  // --- admission -------------------------------------------------------------------------

  async admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
    if (items.length === 0) return [];
    for (const item of items) for (const claim of item.claims) this.claimSpaces.add(claim.space);
    try {
      const reply = admitReply(
        await this.ingest.aiAdmit(this.prefix, ...admitArgs(items, this.maxGroups, this.callerClock ? clock(now) : '')),
      );
      await this.replicas.held(this.ingest);
      return verdictsOf(items, reply);
    } catch (error) {
      throw unavailable('admit failed', error);
    }
  }

  async correlation(key: string, now: number): Promise<CorrelationRecord | undefined> {
    const group = correlationOf(key, await this.background.lrange(`${this.prefix}corr:${key}`, 0, -1));
    // The key's PEXPIRE ends a group by the server's clock; on the caller's, its expiry is by `now`.
    return this.callerClock && group && group.expiresAt <= now ? undefined : group;
  }

  // --- buffers with owners (buffers.ts) ----------------------------------------------------
  claimDue: Store['claimDue'] = (now, leaseMs, limit) => this.buffers.claimDue(now, leaseMs, limit);
  renewLease: Store['renewLease'] = (batch, now, leaseMs) => this.buffers.renewLease(batch, now, leaseMs);
  commit: Store['commit'] = (batch, draft, now) => this.buffers.commit(batch, draft, now);
  commitTurn: Store['commitTurn'] = (batch, draft, now, rule) => this.buffers.commitTurn(batch, draft, now, rule);
  release: Store['release'] = (batch, retryAt) => this.buffers.release(batch, retryAt);
  nextDeadline: Store['nextDeadline'] = () => this.buffers.nextDeadline();
  holdForTyping = (debounceKey: string, _sessionKey: string, untilAt: number, now: number) =>
    this.buffers.holdForTyping(debounceKey, untilAt, now);

  /** `sessionKey`: the output's, when the caller looked it up (a shard's outbox no longer holds it). */
  turnDone = (outputId: string, now: number, sessionKey?: string): ReturnType<Store['turnDone']> =>
    this.turns.done(outputId, now, sessionKey);
  turnOf: Store['turnOf'] = (sessionKey, now) => this.turns.of(sessionKey, now);
  openTurns: Store['openTurns'] = (now, limit) => this.turns.open(now, limit);
  openTurnCount: Store['openTurnCount'] = (now) => this.turns.count(now);

  /**
   * On the ingest connection: the backlog check asks on a delivery's path, and must fail fast,
   * not queue, while Redis is away. `after` (a shard's cursor in the global keys: its life and
   * its seq up to which the global outbox holds its records) counts the shard's records past it
   * too, all of them in another life: committed, not yet in the outbox.
   */
  async openBuffers(after?: { life: string; seq: number }): Promise<number> {
    if (after === undefined) return this.ingest.zcard(`${this.prefix}due`);
    const replies = await this.ingest
      .multi()
      .zcard(`${this.prefix}due`)
      .get(`${this.prefix}life`)
      .xrange(`${this.prefix}out`, `(${after.seq}-0`, '+', 'COUNT', 10_000)
      .xlen(`${this.prefix}out`)
      .exec();
    const failed = replies?.find(([error]) => error)?.[0];
    if (!replies || failed) throw failed ?? new Error('Redis store: the open-buffer count was discarded');
    const [due, life, past, all] = replies.map(([, reply]) => reply);
    return Number(due) + (life === after.life ? (past as unknown[]).length : Number(all));
  }

  // --- conversations: context, activation overrides, revisions, takeovers (conversations.ts) -----
  conversation: Store['conversation'] = (sessionKey, now, read) =>
    this.conversations.conversation(sessionKey, now, read);
  keepContext: Store['keepContext'] = (batch, messages, now, keep) =>
    this.conversations.keepContext(batch, messages, now, keep);
  setActivation: Store['setActivation'] = (sessionKey, override) =>
    this.conversations.setActivation(sessionKey, override);
  revise: Store['revise'] = (sessionKey, debounceKeys, revision, now, keep) =>
    this.conversations.revise(sessionKey, debounceKeys, revision, now, keep);
  holdTakeover: Store['holdTakeover'] = (sessionKey, at, hold, now) =>
    this.conversations.holdTakeover(sessionKey, at, hold, now);
  endTakeover: Store['endTakeover'] = (sessionKey, now, since) =>
    this.conversations.endTakeover(sessionKey, now, since);

  // --- budgets: spends per window, deferred batches (budgets.ts) -------------------------------
  spendBudgets: Store['spendBudgets'] = (budgets, now) => this.budgets.spendBudgets(budgets, now);
  deferBatch: Store['deferBatch'] = (batch, deferKey, dueAt, now) =>
    this.budgets.deferBatch(batch, deferKey, dueAt, now);

  // --- outbox: what event streams read (outbox.ts) ---------------------------------------
  outboxAfter: Store['outboxAfter'] = (seq, limit) => this.outbox.outboxAfter(seq, limit);
  outboxGet: Store['outboxGet'] = (id) => this.outbox.outboxGet(id);
  lastSeq: Store['lastSeq'] = () => this.outbox.lastSeq();
  life = (): Promise<OutboxLife> => this.outbox.life();
  tail: Store['tail'] = (listener, events) => this.outbox.tail(listener, events);
  trimOutbox: Store['trimOutbox'] = (olderThan, keepCount, keepAfterSeq, now) =>
    this.outbox.trimOutbox(olderThan, keepCount, keepAfterSeq, now);
  keepUnread = (afterSeq: number, forMs: number, now: number): Promise<void> =>
    this.outbox.keepUnread(afterSeq, forMs, now);

  /** Resolves once the live tail listens (a commit must not overtake its start). */
  whenTailing = (): Promise<void> => this.tailer.ready;

  // --- push queue: one script per step (push.ts) ------------------------------------------
  claimPush: Store['claimPush'] = (now, leaseMs, limit) => this.push.claimPush(now, leaseMs, limit);
  ackPush: Store['ackPush'] = (lease, outcome, now) => this.push.ackPush(lease, outcome, now);
  nextPushAt: Store['nextPushAt'] = () => this.push.nextPushAt();
  // Claims (contract §15): the push queue's records taken by agent workers (claims.ts).
  claimOutputs: Store['claimOutputs'] = (now, leaseMs, limit) => this.claims.claimOutputs(now, leaseMs, limit);
  extendClaim: Store['extendClaim'] = (lease, leaseUntil, now) => this.claims.extendClaim(lease, leaseUntil, now);
  claimOf: Store['claimOf'] = (id) => this.claims.claimOf(id);
  deliveryCounts: Store['deliveryCounts'] = () => this.push.deliveryCounts();
  deadLetters: Store['deadLetters'] = (limit) => this.push.deadLetters(limit);
  requeueDead: Store['requeueDead'] = (id, limit, now) => this.push.requeueDead(id, limit, now);

  // Named leases and shared values: the bus's, under this store's prefix.
  holdLease: Store['holdLease'] = (name, holder, ttlMs, now) => this.bus.holdLease(name, holder, ttlMs, now);
  dropLease: Store['dropLease'] = (name, holder) => this.bus.dropLease(name, holder);
  fenceHolds: Store['fenceHolds'] = (name, fence) => this.bus.fenceHolds(name, fence);
  fencedPut: Store['fencedPut'] = (name, fence, key, value, ttlMs) =>
    this.bus.fencedPut(name, fence, key, value, ttlMs);
  sharedGet: Store['sharedGet'] = (name) => this.bus.sharedGet(name);
  sharedPut: Store['sharedPut'] = (name, value, ttlMs) => this.bus.sharedPut(name, value, ttlMs);
  /** In the output's commit script (buffers.ts): no call of their own. */
  putWithCommit: NonNullable<Store['putWithCommit']> = (outputId, entries, ttlMs) =>
    this.buffers.putWithCommit(outputId, entries, ttlMs);
  openTrail = (options: TrailLogOptions): TrailLog =>
    (this.trail ??= new RedisTrail(this.url, this.prefix, this.background, options, this.logger));

  /** A hash's fields and values (on the ingest connection). */
  readHash(key: string): Promise<Record<string, string>> {
    return this.ingest.hgetall(key);
  }

  /** `value` under `key` unless one is there already; resolves the value the key holds. */
  async setOnce(key: string, value: string): Promise<string> {
    return ((await this.background.set(key, value, 'NX', 'GET')) as string | null) ?? value;
  }

  // --- operations ------------------------------------------------------------------------

  /** Cluster-wide numbers, cached and refreshed in the background (stats.ts). */
  claimStats = (): ClaimStats => this.stats.claims();
  correlationStats = (): { groups: number; evicted: number } => this.stats.correlation();

  /** Whether the store was reset since start (checked now), and whether it may evict keys. */
  health = (): Promise<StoreHealth> => this.watch.health();

  /**
   * A PING on the ingest connection, within the command timeout; on a Cluster, a read of a key
   * of this store's (PING would go to any node, not the one holding its keys).
   */
  async ping(): Promise<void> {
    try {
      await (this.clustered ? this.ingest.exists(`${this.prefix}epoch`) : this.ingest.ping());
    } catch (error) {
      throw unavailable('ping failed', error);
    }
  }

  async close(): Promise<void> {
    this.tailer.stop();
    this.bus.close();
    await Promise.all([this.ingest, this.background].map((client) => client.quit().catch(() => client.disconnect())));
  }
}
