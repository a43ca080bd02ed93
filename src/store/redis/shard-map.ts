import calculateSlot from 'cluster-key-slot';

/** Redis Cluster's slots. */
const SLOTS = 16384;

/**
 * The key prefixes of a sharded store's shards, `{<keyPrefix>~<shard>~<n>}:`: shard i's hash
 * tag is the first (lowest n) whose slot falls in the i-th of `count` equal slot ranges. A
 * cluster made with `redis-cli --cluster create` gives each master one contiguous range of
 * equal size, so with as many shards as masters (or a multiple) each master holds its share.
 * The same keyPrefix and count always give the same tags: a session's keys stay where they are.
 */
export function shardPrefixes(keyPrefix: string, count: number): string[] {
  return Array.from({ length: count }, (_unused, shard) => {
    for (let n = 0; ; n++) {
      const tag = `${keyPrefix}~${shard}~${n}`;
      if (Math.floor((calculateSlot(tag) * count) / SLOTS) === shard) return `{${tag}}:`;
    }
  });
}

/** The shard a session's keys live on: by the slot of its key, so spread as Cluster spreads keys. */
export function shardOf(sessionKey: string, count: number): number {
  return calculateSlot(sessionKey) % count;
}
