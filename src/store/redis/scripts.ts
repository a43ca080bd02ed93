import { existsSync, readFileSync } from 'node:fs';

/**
 * The store's Lua scripts, one `.lua` file each under `lua/` (shared functions under
 * `lua/include/`), read once when the first connection opens. A line `-- @include <name>`
 * puts `lua/include/<name>.lua` in its place, or the store's shared rule `../rules/<name>.lua`
 * (kept beside its TypeScript twin), each file once per script (as BullMQ does); the build
 * copies the `.lua` files beside the compiled code.
 *
 * Two sets: `whole`, a store on one Redis (or one Cluster slot), and `shard`, a shard of the
 * sharded store (`redis-cluster://`): an include `<name>` whose `include/<name>-shard.lua`
 * exists is that file instead (its commits append to the shard's own outbox, for the store to
 * move to the global one; its part ids name the shard).
 */
export type ScriptSet = 'whole' | 'shard';
const FILES = {
  aiAdmit: 'admit',
  aiClaimDue: 'claim-due',
  aiUnclaim: 'unclaim',
  aiRenew: 'renew',
  aiCommit: 'commit',
  aiCommitMany: 'commit-many',
  aiCommitTurn: 'commit-turn',
  aiKeepContext: 'keep-context',
  aiConversation: 'conversation',
  aiRevise: 'revise',
  aiHoldTakeover: 'hold-takeover',
  aiEndTakeover: 'end-takeover',
  aiSpendBudgets: 'spend-budgets',
  aiDefer: 'defer',
  aiTurnDone: 'turn-done',
  aiTurns: 'turns',
  aiRelease: 'release',
  aiHoldTyping: 'hold-typing',
  aiEarliest: 'earliest',
  aiRead: 'read',
  aiTrim: 'trim',
  aiKeepUnread: 'keep-unread',
  aiDropEvicted: 'drop-evicted',
  aiClaimPush: 'claim-push',
  aiAckPush: 'ack-push',
  aiRequeueDead: 'requeue-dead',
  aiClaimOutputs: 'claim-outputs',
  aiExtendClaim: 'extend-claim',
  aiClaimOf: 'claim-of',
  aiStats: 'stats',
  aiHoldLease: 'hold-lease',
  aiFenced: 'fenced',
  aiTrailAdd: 'trail-add',
  aiTrailFind: 'trail-find',
  aiShardPending: 'shard-pending',
  aiAppendDrained: 'append-drained',
  aiRenewLife: 'renew-life',
} as const;

export type ScriptName = keyof typeof FILES;

const folder = new URL('./lua/', import.meta.url);
const loaded = new Map<ScriptSet, Record<ScriptName, string>>();

function read(path: string): string {
  try {
    return readFileSync(new URL(path, folder), 'utf8');
  } catch (error) {
    throw new Error(
      `Redis store: cannot read its Lua script ${new URL(path, folder).pathname} (${(error as Error).message}); rebuild with \`npm run build\``,
    );
  }
}

/** An include's text: `lua/include/<name>.lua`, else the shared rule `store/rules/<name>.lua`. */
function include(name: string, set: ScriptSet): string {
  if (set === 'shard' && existsSync(new URL(`include/${name}-shard.lua`, folder))) name = `${name}-shard`;
  return existsSync(new URL(`include/${name}.lua`, folder))
    ? read(`include/${name}.lua`)
    : read(`../../rules/${name}.lua`);
}

/** A script's text with its includes in place. */
export function scriptText(file: string, set: ScriptSet = 'whole'): string {
  const included = new Set<string>();
  const expand = (text: string): string =>
    text.replace(/^-- @include ([\w-]+)[ \t]*$/gm, (_line, name: string) => {
      if (included.has(name)) return `-- (${name} included above)`;
      included.add(name);
      return expand(include(name, set)).trimEnd();
    });
  return expand(read(`${file}.lua`));
}

/** Every script of a set by the command name it is defined under. */
export function scripts(set: ScriptSet = 'whole'): Record<ScriptName, string> {
  let texts = loaded.get(set);
  if (!texts) {
    texts = Object.fromEntries(Object.entries(FILES).map(([name, file]) => [name, scriptText(file, set)])) as Record<
      ScriptName,
      string
    >;
    loaded.set(set, texts);
  }
  return texts;
}
