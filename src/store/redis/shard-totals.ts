import type { ClaimStats, StoreHealth } from '../../core/ports/index.js';

/*
 * The sharded store's numbers and health (sharded.ts): each shard answers for its own keys, and
 * an operator reads one store.
 */

/** Claim counts of every shard, summed, space by space too. */
export function totalClaimStats(all: readonly ClaimStats[]): ClaimStats {
  const total: ClaimStats = { keys: 0, evicted: 0, evictedBySpace: {} };
  const bySpace: Record<string, number> = {};
  for (const stats of all) {
    total.keys += stats.keys;
    total.evicted += stats.evicted;
    for (const [space, n] of Object.entries(stats.evictedBySpace)) bySpace[space] = (bySpace[space] ?? 0) + n;
  }
  total.evictedBySpace = bySpace;
  return total;
}

/** Correlation groups of every shard, summed. */
export function totalCorrelationStats(all: ReadonlyArray<{ groups: number; evicted: number }>): {
  groups: number;
  evicted: number;
} {
  return {
    groups: all.reduce((sum, s) => sum + s.groups, 0),
    evicted: all.reduce((sum, s) => sum + s.evicted, 0),
  };
}

/**
 * The global keys' health and every shard's, as one: rollbacks summed (a shard's reset names
 * the shard in `lastRollback`), the last of them, and an evicting policy if any node has one.
 */
export function totalHealth(all: readonly StoreHealth[]): StoreHealth {
  const health: StoreHealth = { rollbacks: all.reduce((sum, one) => sum + one.rollbacks, 0) };
  for (const one of all) {
    if (one.lastRollback && (!health.lastRollback || one.lastRollback.at >= health.lastRollback.at))
      health.lastRollback = one.lastRollback;
    if (one.evictionPolicy && !health.evictionPolicy) health.evictionPolicy = one.evictionPolicy;
    if (one.evictedKeys !== undefined) health.evictedKeys = Math.max(health.evictedKeys ?? 0, one.evictedKeys);
  }
  return health;
}
