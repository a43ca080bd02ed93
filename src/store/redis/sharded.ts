import { ConfigError, counted } from '../../core/errors.js';
import type {
  AdmitItem,
  AdmitVerdict,
  ClaimStats,
  LeasedBatch,
  OutboxDraft,
  OutboxRecord,
  Store,
  StoreHealth,
  TurnCommit,
  TurnRule,
  TurnView,
} from '../../core/ports/index.js';
import type { CorrelationRecord } from '../../events/inbound.js';
import { ShardAppender } from './appender.js';
import { AwayShards } from './away.js';
import { redacted, unavailable } from './codec.js';
import { backgroundOptions, connect, type ScriptedRedis } from './connections.js';
import type { RedisStoreOptions } from './options.js';
import { RedisStore } from './redis.js';
import { shardOf, shardPrefixes } from './shard-map.js';
import { totalClaimStats, totalCorrelationStats, totalHealth } from './shard-totals.js';

/** How often every instance moves what a shard holds and the global outbox does not (a commit cut short). */
const SWEEP_MS = 1000;

export interface ShardedStoreOptions extends RedisStoreOptions {
  /** Shards the sessions are spread over; fixed for the life of the data. @default 3 */
  shards?: number;
}

/**
 * The store on a Redis Cluster (`redis-cluster://`), sharded by session. Each shard is a whole
 * store of its own (the one-Redis scripts) under a hash tag of its own, so a session's claims,
 * correlation groups, buffers, locks, leases and turns live on one master, and admission,
 * flush claims and leases cost that master alone. What must be one thing stays on the global
 * tag (`{<keyPrefix>}:`): the outbox and its seq (SSE ids, `Last-Event-ID`), the push queue,
 * the trail, named leases, the bus.
 *
 * A commit takes two steps: on the session's shard (fence, buffer, lock, the record into the
 * shard's own outbox: one script), then to the global outbox (appender.ts: in the shard's
 * order, each record once). A commit cut short between the two (the instance died) is moved by
 * the next commit on that shard, or by any instance's sweep within a second.
 */
export class ShardedRedisStore implements Store {
  readonly kind = 'redis-cluster';
  readonly durable = true;
  readonly shared = true;
  private rotor = 0;
  private readonly sweep: NodeJS.Timeout;
  /** Shards whose master failed a claim or a deadline read: the flush loop passes them over until they answer. */
  private readonly away: AwayShards;

  private constructor(
    private readonly global: RedisStore,
    private readonly shards: readonly RedisStore[],
    private readonly appender: ShardAppender,
    private readonly appenderClient: ScriptedRedis,
    private readonly logger: RedisStoreOptions['logger'],
    private readonly globalPrefix: string,
  ) {
    this.away = new AwayShards((shard) => (this.shards[shard] as RedisStore).ping(), logger);
    let failing = false;
    this.sweep = setInterval(() => {
      this.appender.drainAll().then(
        () => {
          failing = false;
        },
        (error: unknown) => {
          if (!failing)
            this.logger?.warn(
              { err: error },
              'Redis store: moving shard records to the outbox failed; tried again every second',
            );
          failing = true;
        },
      );
    }, SWEEP_MS);
    this.sweep.unref();
  }

  /** Connect to `redis-cluster://[:password@]host:port[,host:port...]`: the global keys, then each shard's. */
  static async open(url: string, options: ShardedStoreOptions = {}): Promise<ShardedRedisStore> {
    const count = options.shards ?? 3;
    if (!Number.isInteger(count) || count < 1 || count > 1024)
      throw new ConfigError(`redis.shards: ${count} is not a whole number from 1 to 1024`);
    if ((options.waitReplicas ?? 0) > 0)
      throw new ConfigError(
        'redis.waitReplicas: not supported with redis-cluster:// (WAIT answers for one node); use 0',
      );
    const keyPrefix = options.keyPrefix ?? 'ai';
    const global = await RedisStore.open(url, options);
    const opened: RedisStore[] = [global];
    try {
      await ShardedRedisStore.checkShardCount(global, `{${keyPrefix}}:shards`, count);
      const prefixes = shardPrefixes(keyPrefix, count);
      const shards: RedisStore[] = [];
      for (const [index, prefix] of prefixes.entries()) {
        const shard = await RedisStore.open(url, {
          ...options,
          keyPrefix: prefix.slice(1, -2),
          // A commit whose answer was lost: in the shard's outbox, or already moved to the global one.
          shard: {
            recorded: async (id) => (await shards[index]?.outboxGet(id)) ?? global.outboxGet(id),
            index,
            of: count,
          },
        });
        shards.push(shard);
        opened.push(shard);
      }
      const client = connect(url, 'appender', backgroundOptions(options.commandTimeoutMs ?? 1000), options.logger);
      await client.connect();
      return new ShardedRedisStore(
        global,
        shards,
        new ShardAppender(client, `{${keyPrefix}}:`, prefixes),
        client,
        options.logger,
        `{${keyPrefix}}:`,
      );
    } catch (error) {
      await Promise.all(opened.map((store) => store.close().catch(() => undefined)));
      if (error instanceof ConfigError) throw error;
      throw unavailable(`cannot open the shards on ${redacted(url)}`, error);
    }
  }

  /** The shard count is written once; a different one would look for every session on the wrong shard. */
  private static async checkShardCount(global: RedisStore, key: string, count: number): Promise<void> {
    const recorded = await global.setOnce(key, String(count));
    if (recorded !== String(count)) {
      throw new ConfigError(
        `redis.shards: this store was created with ${counted(Number(recorded), 'shard')}, not ${count}; a session's keys live on the shard its count gives`,
      );
    }
  }

  private shardFor(sessionKey: string): RedisStore {
    return this.shards[shardOf(sessionKey, this.shards.length)] as RedisStore;
  }

  // --- admission: each item on its session's shard -----------------------------------------

  async admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
    const byShard = new Map<number, number[]>(); // shard -> the indexes of its items
    items.forEach((item, n) => {
      const shard = shardOf(item.part.event.sessionKey, this.shards.length);
      const indexes = byShard.get(shard);
      if (indexes) indexes.push(n);
      else byShard.set(shard, [n]);
    });
    const [only] = byShard.keys();
    if (byShard.size <= 1) return only === undefined ? [] : (this.shards[only] as RedisStore).admit(items, now);
    const verdicts = new Array<AdmitVerdict>(items.length);
    await Promise.all(
      [...byShard].map(async ([shard, indexes]) => {
        const got = await (this.shards[shard] as RedisStore).admit(
          indexes.map((n) => items[n] as AdmitItem),
          now,
        );
        indexes.forEach((n, j) => {
          verdicts[n] = got[j] as AdmitVerdict;
        });
      }),
    );
    return verdicts;
  }

  /**
   * A group lives with its conversation's session, which its key does not name: asked of every
   * shard. Found on one, it is the answer whatever another shard (its master away) says; found
   * on none while one failed, that one may hold it: the failure is the answer.
   */
  async correlation(key: string, now: number): Promise<CorrelationRecord | undefined> {
    const asked = await Promise.allSettled(this.shards.map((shard) => shard.correlation(key, now)));
    for (const answer of asked) if (answer.status === 'fulfilled' && answer.value) return answer.value;
    const failed = asked.find((answer) => answer.status === 'rejected');
    if (failed) throw failed.reason;
    return undefined;
  }

  // --- buffers: each on its session's shard -------------------------------------------------

  /**
   * Shard after shard, from a different one each time, until `limit` batches are taken. A shard
   * that fails (its master away) is passed over: a throw would strand the batches the shards
   * before it leased (due again only when their lease ran out) and stop every shard's flushes
   * for one master's outage. Then it is passed over until it answers a ping (away.ts), so a
   * hung master costs one command timeout, not one per claim. It throws only when it took
   * nothing and a shard failed.
   */
  async claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]> {
    const taken: LeasedBatch[] = [];
    let failure: unknown;
    const start = this.rotor++ % this.shards.length;
    for (let n = 0; n < this.shards.length && taken.length < limit; n++) {
      const index = (start + n) % this.shards.length;
      if (this.away.passes(index)) continue;
      try {
        taken.push(...(await (this.shards[index] as RedisStore).claimDue(now, leaseMs, limit - taken.length)));
        this.away.answered(index);
      } catch (error) {
        failure ??= error;
        this.away.failed(index, error);
      }
    }
    if (failure !== undefined && taken.length === 0) throw failure;
    return taken;
  }

  renewLease: Store['renewLease'] = (batch, now, leaseMs) =>
    this.shardFor(batch.sessionKey).renewLease(batch, now, leaseMs);
  release: Store['release'] = (batch, retryAt) => this.shardFor(batch.sessionKey).release(batch, retryAt);
  holdForTyping = (debounceKey: string, sessionKey: string, untilAt: number, now: number) =>
    this.shardFor(sessionKey).holdForTyping(debounceKey, sessionKey, untilAt, now);

  /** The earliest of the shards that answer (a shard passed over, or failing, is looked at by the shared store's polling). */
  async nextDeadline(): Promise<number | undefined> {
    const asked = await Promise.allSettled(
      this.shards.map((shard, index) => {
        if (this.away.passes(index)) return Promise.resolve(undefined);
        return shard.nextDeadline().catch((error: unknown) => {
          this.away.failed(index, error);
          throw error;
        });
      }),
    );
    const answered = asked.filter((answer) => answer.status === 'fulfilled');
    if (answered.length === 0) throw (asked[0] as PromiseRejectedResult).reason;
    const deadlines = answered.map((answer) => answer.value).filter((at) => at !== undefined);
    return deadlines.length === 0 ? undefined : Math.min(...deadlines);
  }

  /**
   * Open buffers, and records committed on a shard but not yet in the outbox: once this is 0,
   * everything admitted is in the outbox. The cursors are read first: one that moves meanwhile
   * can only count a record twice, never miss one.
   */
  async openBuffers(): Promise<number> {
    const cursors = await this.global.readHash(`${this.globalPrefix}cursors`);
    const counts = await Promise.all(
      this.shards.map((shard, n) => {
        const [life = '', seq = '0'] = (cursors[n] ?? '').split(' '); // `<life> <seq> <id>` (append-drained.lua)
        return shard.openBuffers({ life, seq: Number(seq) });
      }),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  async commit(batch: LeasedBatch, draft: OutboxDraft, now: number): Promise<OutboxRecord | undefined> {
    await this.global.whenTailing();
    const shard = shardOf(batch.sessionKey, this.shards.length);
    const record = await (this.shards[shard] as RedisStore).commit(batch, draft, now);
    return record && this.published(shard, record);
  }

  async commitTurn(
    batch: LeasedBatch,
    draft: OutboxDraft,
    now: number,
    rule: TurnRule,
  ): Promise<TurnCommit | undefined> {
    await this.global.whenTailing();
    const shard = shardOf(batch.sessionKey, this.shards.length);
    const done = await (this.shards[shard] as RedisStore).commitTurn(batch, draft, now, rule);
    if (!done || done.held) return done;
    done.record = await this.published(shard, done.record);
    return done;
  }

  /** A record committed on a shard, once in the global outbox: with its global seq. */
  private async published(shard: number, record: OutboxRecord): Promise<OutboxRecord> {
    const seqs = await this.appender.drain(shard);
    const seq = seqs.get(record.id) || (await this.global.outboxGet(record.id))?.seq;
    if (!seq)
      throw new Error(
        `Redis store: output ${record.id} is committed on its shard but not yet in the outbox; it is moved there within a second`,
      );
    record.seq = seq;
    return record;
  }

  // --- agent turns: on the session's shard ----------------------------------------------------

  async turnDone(outputId: string, now: number): ReturnType<Store['turnDone']> {
    const record = await this.global.outboxGet(outputId);
    if (!record) return { result: 'unknown' };
    return this.shardFor(record.sessionKey).turnDone(outputId, now, record.sessionKey);
  }

  turnOf: Store['turnOf'] = (sessionKey, now) => this.shardFor(sessionKey).turnOf(sessionKey, now);

  async openTurns(now: number, limit: number): Promise<TurnView[]> {
    const views = (await Promise.all(this.shards.map((shard) => shard.openTurns(now, limit)))).flat();
    // open turns first, the soonest to close first; then sessions with held messages
    return views
      .sort((a, b) => (a.open === b.open ? (a.until ?? 0) - (b.until ?? 0) : a.open ? -1 : 1))
      .slice(0, limit);
  }

  async openTurnCount(now: number): Promise<number> {
    return (await Promise.all(this.shards.map((shard) => shard.openTurnCount(now)))).reduce((sum, n) => sum + n, 0);
  }

  // --- conversations: on the session's shard, as its commits are ---------------------------------

  conversation: Store['conversation'] = (sessionKey, now, read) =>
    this.shardFor(sessionKey).conversation(sessionKey, now, read);
  keepContext: Store['keepContext'] = (batch, messages, now, keep) =>
    this.shardFor(batch.sessionKey).keepContext(batch, messages, now, keep);
  setActivation: Store['setActivation'] = (sessionKey, override, now) =>
    this.shardFor(sessionKey).setActivation(sessionKey, override, now);
  revise: Store['revise'] = (sessionKey, debounceKeys, revision, now, keep) =>
    this.shardFor(sessionKey).revise(sessionKey, debounceKeys, revision, now, keep);
  holdTakeover: Store['holdTakeover'] = (sessionKey, at, hold, now) =>
    this.shardFor(sessionKey).holdTakeover(sessionKey, at, hold, now);
  endTakeover: Store['endTakeover'] = (sessionKey, now, since) =>
    this.shardFor(sessionKey).endTakeover(sessionKey, now, since);

  // --- budgets: a budget may count several sessions (a channel's), so global; a deferral on the session's shard
  spendBudgets: Store['spendBudgets'] = (budgets, now) => this.global.spendBudgets(budgets, now);
  deferBatch: Store['deferBatch'] = (batch, deferKey, dueAt, now) =>
    this.shardFor(batch.sessionKey).deferBatch(batch, deferKey, dueAt, now);

  // --- the outbox, the push queue, leases, shared values, the trail, the bus: global -------------

  outboxAfter: Store['outboxAfter'] = (seq, limit) => this.global.outboxAfter(seq, limit);
  outboxGet: Store['outboxGet'] = (id) => this.global.outboxGet(id);
  lastSeq: Store['lastSeq'] = () => this.global.lastSeq();
  life = (): ReturnType<RedisStore['life']> => this.global.life();
  tail: Store['tail'] = (listener, events) => this.global.tail(listener, events);
  trimOutbox: Store['trimOutbox'] = (olderThan, keepCount, keepAfterSeq, now) =>
    this.global.trimOutbox(olderThan, keepCount, keepAfterSeq, now);
  keepUnread = (afterSeq: number, forMs: number, now: number): Promise<void> =>
    this.global.keepUnread(afterSeq, forMs, now);
  claimPush: Store['claimPush'] = (now, leaseMs, limit) => this.global.claimPush(now, leaseMs, limit);
  ackPush: Store['ackPush'] = (lease, outcome, now) => this.global.ackPush(lease, outcome, now);
  nextPushAt: Store['nextPushAt'] = () => this.global.nextPushAt();
  claimOutputs: Store['claimOutputs'] = (now, leaseMs, limit) => this.global.claimOutputs(now, leaseMs, limit);
  extendClaim: Store['extendClaim'] = (lease, leaseUntil, now) => this.global.extendClaim(lease, leaseUntil, now);
  claimOf: Store['claimOf'] = (id) => this.global.claimOf(id);
  deliveryCounts: Store['deliveryCounts'] = () => this.global.deliveryCounts();
  deadLetters: Store['deadLetters'] = (limit) => this.global.deadLetters(limit);
  requeueDead: Store['requeueDead'] = (id, limit, now) => this.global.requeueDead(id, limit, now);
  holdLease: Store['holdLease'] = (name, holder, ttlMs, now) => this.global.holdLease(name, holder, ttlMs, now);
  dropLease: Store['dropLease'] = (name, holder) => this.global.dropLease(name, holder);
  fenceHolds: Store['fenceHolds'] = (name, fence) => this.global.fenceHolds(name, fence);
  fencedPut: Store['fencedPut'] = (name, fence, key, value, ttlMs, now) =>
    this.global.fencedPut(name, fence, key, value, ttlMs, now);
  sharedGet: Store['sharedGet'] = (name, now) => this.global.sharedGet(name, now);
  sharedPut: Store['sharedPut'] = (name, value, ttlMs, now) => this.global.sharedPut(name, value, ttlMs, now);
  openTrail: NonNullable<Store['openTrail']> = (options) => this.global.openTrail(options);
  get bus(): Store['bus'] {
    return this.global.bus;
  }

  // --- operations -------------------------------------------------------------------------

  claimStats(): ClaimStats {
    return totalClaimStats(this.shards.map((shard) => shard.claimStats()));
  }

  correlationStats(): { groups: number; evicted: number } {
    return totalCorrelationStats(this.shards.map((shard) => shard.correlationStats()));
  }

  /** The global keys' health and every shard's, as one (shard-totals.ts). */
  async health(): Promise<StoreHealth> {
    return totalHealth(await Promise.all([this.global, ...this.shards].map((store) => store.health())));
  }

  async ping(): Promise<void> {
    await Promise.all([this.global, ...this.shards].map((store) => store.ping()));
  }

  /** What a commit cut short left on a shard is moved by the next commit there, or any instance's sweep. */
  async close(): Promise<void> {
    clearInterval(this.sweep);
    await Promise.all([this.global, ...this.shards].map((store) => store.close()));
    await this.appenderClient.quit().catch(() => this.appenderClient.disconnect());
  }
}
