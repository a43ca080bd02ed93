import type { ClaimStats } from '../../core/ports/index.js';
import type { ScriptedRedis } from './connections.js';
import { statsReply } from './replies.js';

/** claimStats / correlationStats are refreshed in the background at most this often. */
const STATS_EVERY_MS = 1000;

/**
 * The Redis store's cluster-wide numbers, cached: each read returns the last known ones and
 * refreshes them in the background at most once a second. `keys` counts the claim spaces this
 * instance has used (`spaces`), and may include keys expired since the last sweep (one admission in 64).
 */
export class RedisStats {
  private stats = {
    keys: 0,
    claimsEvicted: 0,
    groups: 0,
    groupsEvicted: 0,
    bySpace: {} as Record<string, number>,
    at: -Infinity,
  };

  constructor(
    private readonly client: ScriptedRedis,
    private readonly prefix: string,
    private readonly spaces: ReadonlySet<string>,
  ) {}

  claims(): ClaimStats {
    this.refresh();
    return { keys: this.stats.keys, evicted: this.stats.claimsEvicted, evictedBySpace: this.stats.bySpace };
  }

  correlation(): { groups: number; evicted: number } {
    this.refresh();
    return { groups: this.stats.groups, evicted: this.stats.groupsEvicted };
  }

  private refresh(): void {
    const started = Date.now();
    if (started - this.stats.at < STATS_EVERY_MS) return;
    this.stats.at = started;
    const spaces = [...this.spaces];
    this.client.aiStats(this.prefix, ...spaces).then(
      (reply) => {
        const [keys, claimsEvicted, groups, groupsEvicted, ...perSpace] = statsReply(reply);
        const bySpace: Record<string, number> = {};
        spaces.forEach((space, i) => {
          if (perSpace[i]) bySpace[space] = perSpace[i];
        });
        this.stats = {
          keys: keys ?? 0,
          claimsEvicted: claimsEvicted ?? 0,
          groups: groups ?? 0,
          groupsEvicted: groupsEvicted ?? 0,
          bySpace,
          at: started,
        };
      },
      () => undefined, // the numbers stay as they were; readiness reports the outage
    );
  }
}
