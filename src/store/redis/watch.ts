import type { Redis } from 'ioredis';
import type { StoreHealth } from '../../ports.js';
import type { ConnectionLogger } from './connections.js';
import type { StoreIdentity } from './identity.js';

/**
 * What the Redis store watches on the server besides its own keys: that the server still holds
 * what this instance saw (identity.ts), and its eviction policy. Checked at open and whenever
 * `health()` is asked (the operations view asks periodically).
 */
export class ServerWatch {
  constructor(
    private readonly client: Redis,
    private readonly identity: StoreIdentity,
    private readonly logger: ConnectionLogger | undefined,
  ) {}

  /**
   * Learn the store's epoch (written when absent), and check the eviction policy: evicting
   * keys would drop claims, buffers and leases silently, so say so at start.
   */
  async atOpen(): Promise<void> {
    await this.identity.establish(this.client);
    try {
      const [, policy] = (await this.client.config('GET', 'maxmemory-policy')) as string[];
      if (policy !== undefined && policy !== 'noeviction') {
        this.logger?.warn({ policy }, `Redis store: maxmemory-policy is "${policy}"; set maxmemory-policy noeviction, or claims, buffers and leases may vanish under memory pressure`);
      }
    } catch {
      // CONFIG is often disabled on managed Redis; the check is advice only.
    }
  }

  /** Whether the store was reset since start (checked now). */
  async health(): Promise<StoreHealth> {
    await this.identity.check(this.client).catch(() => undefined); // an outage is readiness's to report
    const health: StoreHealth = { rollbacks: this.identity.rollbacks };
    if (this.identity.last) health.lastRollback = this.identity.last;
    return health;
  }
}
