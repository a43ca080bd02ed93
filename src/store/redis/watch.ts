import type { StoreHealth } from '../../core/ports/index.js';
import type { ConnectionLogger, ScriptedRedis } from './connections.js';
import type { StoreIdentity } from './identity.js';

/**
 * What the Redis store watches on the server besides its own keys: that the server still holds
 * what this instance saw (identity.ts), and its eviction policy (an operator may change it while
 * the service runs). Checked at open and whenever `health()` is asked (the operations view asks
 * every 10 s and for `/v1/stats`).
 */
export class ServerWatch {
  /** The policy last read; undefined while unknown (CONFIG refused: managed Redis). */
  private policy: string | undefined;
  private evictedKeys: number | undefined;

  constructor(
    private readonly client: ScriptedRedis,
    private readonly identity: StoreIdentity,
    private readonly logger: ConnectionLogger | undefined,
  ) {}

  /** Learn the store's epoch (written when absent), and check the eviction policy. */
  async atOpen(): Promise<void> {
    await this.identity.establish(this.client);
    await this.checkPolicy(true);
  }

  /** Whether the store was reset since start, and whether it may evict keys (both checked now). */
  async health(): Promise<StoreHealth> {
    await Promise.all([
      this.identity.check(this.client).catch(() => undefined), // an outage is readiness's to report
      this.checkPolicy(false),
    ]);
    const health: StoreHealth = { rollbacks: this.identity.rollbacks };
    if (this.identity.last) health.lastRollback = this.identity.last;
    if (this.policy !== undefined && this.policy !== 'noeviction') {
      health.evictionPolicy = this.policy;
      if (this.evictedKeys !== undefined) health.evictedKeys = this.evictedKeys;
    }
    return health;
  }

  /**
   * Evicting keys would drop claims, buffers and leases silently: said at start (a warning)
   * and whenever the policy changes to an evicting one (an error: it was fine before).
   */
  private async checkPolicy(atStart: boolean): Promise<void> {
    let policy: string | undefined;
    try {
      [, policy] = (await this.client.config('GET', 'maxmemory-policy')) as string[];
      const evicted = /^evicted_keys:(\d+)/m.exec(await this.client.info('stats'))?.[1];
      this.evictedKeys = evicted === undefined ? undefined : Number(evicted);
    } catch {
      return; // CONFIG is often disabled on managed Redis; the check is advice only.
    }
    const before = this.policy;
    this.policy = policy;
    if (policy === undefined || policy === before) return;
    const evicting = policy !== 'noeviction';
    if (atStart) {
      if (evicting)
        this.logger?.warn(
          { policy },
          `Redis store: maxmemory-policy is "${policy}"; set maxmemory-policy noeviction, or claims, buffers and leases may vanish under memory pressure`,
        );
    } else if (evicting) {
      const message = `Redis store: maxmemory-policy CHANGED to "${policy}" (was "${before ?? 'unknown'}"); under memory pressure Redis now evicts claims, buffers, leases and queued outputs: set maxmemory-policy noeviction again`;
      if (this.logger?.error) this.logger.error({ policy, was: before, evictedKeys: this.evictedKeys }, message);
      else this.logger?.warn({ policy, was: before }, message);
    } else {
      this.logger?.warn({ policy, was: before }, 'Redis store: maxmemory-policy is noeviction again');
    }
  }
}
