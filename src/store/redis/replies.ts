import type { FlushReason, TurnLink } from '../../core/ports/index.js';

/*
 * Typed decoders of the scripts' replies, one per reply shape: a script and the TypeScript that
 * reads it are two files, and a change to one without the other fails here, naming the script and
 * the place in its reply, not later as a field that is quietly undefined. Redis turns a Lua
 * number into an integer reply, a Lua string into a bulk string, a table into an array and
 * `false` or nil into null (https://redis.io/docs/latest/develop/interact/programmability/lua-api/#lua-to-resp2-type-conversion).
 */

/** A reply that is not of the shape its script's decoder expects. */
export class ReplyShapeError extends Error {
  override name = 'ReplyShapeError';
  constructor(script: string, at: string, expected: string, value: unknown) {
    super(`Unexpected reply from ${script}.lua: ${at} is ${JSON.stringify(value) ?? String(value)}, not ${expected}`);
  }
}

/** Reads one value of a reply; `at` names where it is, for the error. */
type Decoder<T> = (value: unknown, at: string, script: string) => T;

const text: Decoder<string> = (value, at, script) => {
  if (typeof value !== 'string') throw new ReplyShapeError(script, at, 'a string', value);
  return value;
};

/** A Lua number (an integer reply). */
const integer: Decoder<number> = (value, at, script) => {
  if (typeof value !== 'number') throw new ReplyShapeError(script, at, 'an integer', value);
  return value;
};

/** A number a script may send as an integer or as digits (`int(now)` in lua/include/prelude.lua). */
const numeric: Decoder<number> = (value, at, script) => {
  const n = typeof value === 'string' && value !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new ReplyShapeError(script, at, 'a number', value);
  return n;
};

const array = (value: unknown, at: string, script: string): unknown[] => {
  if (!Array.isArray(value)) throw new ReplyShapeError(script, at, 'an array', value);
  return value as unknown[];
};

const listOf =
  <T>(item: Decoder<T>): Decoder<T[]> =>
  (value, at, script) =>
    array(value, at, script).map((element, i) => item(element, `${at}[${i}]`, script));

const texts = listOf(text);

/** admit.lua's answer, item by item; `group` is the correlation list (empty when none). */
export type AdmitReply = Array<
  | { verdict: 'accepted'; partId: string; deadline: number; group: string[] }
  | { verdict: 'claimed'; claim: number }
  | { verdict: 'correlated'; retry: boolean; group: string[] }
>;

export function admitReply(value: unknown): AdmitReply {
  return array(value, 'reply', 'admit').map((item, i) => {
    const at = `reply[${i}]`;
    const [verdict, a, b, c] = array(item, at, 'admit');
    if (verdict === 'claimed') return { verdict, claim: integer(a, `${at}[1]`, 'admit') };
    if (verdict === 'correlated')
      return { verdict, retry: integer(a, `${at}[1]`, 'admit') === 1, group: texts(b, `${at}[2]`, 'admit') };
    if (verdict !== 'accepted')
      throw new ReplyShapeError('admit', `${at}[0]`, "'accepted', 'claimed' or 'correlated'", verdict);
    return {
      verdict,
      partId: text(a, `${at}[1]`, 'admit'),
      deadline: numeric(b, `${at}[2]`, 'admit'),
      group: texts(c, `${at}[3]`, 'admit'),
    };
  });
}

/** A stream entry with its delivery state, as read.lua and claim-push.lua return it. */
export type EntryReply = [streamId: string, fields: string[], state: string | null];

const entry: Decoder<EntryReply> = (value, at, script) => {
  const [streamId, fields, state] = array(value, at, script);
  return [
    text(streamId, `${at}[0]`, script),
    texts(fields, `${at}[1]`, script),
    state === null ? null : text(state, `${at}[2]`, script),
  ];
};

/** read.lua: records, oldest first. */
export function entriesReply(value: unknown, script = 'read'): EntryReply[] {
  return listOf(entry)(value, 'reply', script);
}

/** claim-push.lua: each record taken, with its token and lease. */
export function claimPushReply(value: unknown): Array<[entry: EntryReply, token: number, leaseUntil: number]> {
  return array(value, 'reply', 'claim-push').map((taken, i) => {
    const at = `reply[${i}]`;
    const [streamId, fields, state, token, leaseUntil] = array(taken, at, 'claim-push');
    return [
      entry([streamId, fields, state], at, 'claim-push'),
      integer(token, `${at}[3]`, 'claim-push'),
      integer(leaseUntil, `${at}[4]`, 'claim-push'),
    ];
  });
}

/** claim-outputs.lua: each record taken (its state counting this attempt), its token, lease and whether an earlier lease ran out. */
export function claimOutputsReply(
  value: unknown,
): Array<[entry: EntryReply, token: number, leaseUntil: number, expired: boolean]> {
  return array(value, 'reply', 'claim-outputs').map((taken, i) => {
    const at = `reply[${i}]`;
    const [streamId, fields, state, token, leaseUntil, expired] = array(taken, at, 'claim-outputs');
    return [
      entry([streamId, fields, state], at, 'claim-outputs'),
      integer(token, `${at}[3]`, 'claim-outputs'),
      integer(leaseUntil, `${at}[4]`, 'claim-outputs'),
      integer(expired, `${at}[5]`, 'claim-outputs') === 1,
    ];
  });
}

/** claim-of.lua: null (no such record), or the record and the lease on it (`<token> <leaseUntil>`, null when none). */
export function claimOfReply(
  value: unknown,
): [entry: EntryReply, lease: { token: number; leaseUntil: number } | null] | null {
  if (value === null) return null;
  const [streamId, fields, state, lease] = array(value, 'reply', 'claim-of');
  const record = entry([streamId, fields, state], 'reply', 'claim-of');
  if (lease === null) return [record, null];
  const match = /^(\d+) (\d+)$/.exec(text(lease, 'reply[3]', 'claim-of'));
  if (!match) throw new ReplyShapeError('claim-of', 'reply[3]', "'<token> <leaseUntil>'", lease);
  return [record, { token: Number(match[1]), leaseUntil: Number(match[2]) }];
}

/** claim-due.lua: each batch taken, its parts as buffer list elements. */
export type ClaimReply = Array<
  | [debounceKey: string, sessionKey: string, fence: number, leaseUntil: number, reason: FlushReason, parts: string[]]
  | [
      debounceKey: string,
      sessionKey: string,
      fence: number,
      leaseUntil: number,
      reason: FlushReason,
      parts: string[],
      conversation: LeasedConversationReply,
    ]
>;

/** A leased batch's conversation (claim-due.lua): as conversation.lua reads it without the context, and whether the session keeps some. */
export type LeasedConversationReply = [state: ConversationStateReply, keepsContext: boolean];

const REASONS: ReadonlySet<string> = new Set<FlushReason>([
  'window',
  'count',
  'max_wait',
  'command',
  'shutdown',
  'takeover',
  'turn',
  'max_held',
  'budget',
]);

const isReason = (value: unknown): value is FlushReason => typeof value === 'string' && REASONS.has(value);

const reason: Decoder<FlushReason> = (value, at, script) => {
  if (!isReason(value)) throw new ReplyShapeError(script, at, 'a flush reason', value);
  return value;
};

export function claimDueReply(value: unknown): ClaimReply {
  return array(value, 'reply', 'claim-due').map((batch, i) => {
    const at = `reply[${i}]`;
    const row = array(batch, at, 'claim-due');
    const [debounceKey, sessionKey, fence, leaseUntil, why, parts] = row;
    const leased = [
      text(debounceKey, `${at}[0]`, 'claim-due'),
      text(sessionKey, `${at}[1]`, 'claim-due'),
      integer(fence, `${at}[2]`, 'claim-due'),
      integer(leaseUntil, `${at}[3]`, 'claim-due'),
      reason(why, `${at}[4]`, 'claim-due'),
      texts(parts, `${at}[5]`, 'claim-due'),
    ] as const;
    if (row.length <= 6) return [...leased];
    const state = array(row[6], `${at}[6]`, 'claim-due');
    return [
      ...leased,
      [
        conversationStateReply(state.slice(0, 3), `${at}[6]`, 'claim-due'),
        integer(state[3], `${at}[6][3]`, 'claim-due') === 1,
      ],
    ];
  });
}

/** commit.lua's answer: the record's seq and the time it was committed, null for a stale fence, or 'held' (refused: the session has held messages). */
export type CommitReply = [seq: number, at: number] | null | 'held';

export function commitReply(value: unknown): CommitReply {
  if (value === null || value === 'held') return value;
  const [seq, at] = array(value, 'reply', 'commit');
  return [numeric(seq, 'reply[0]', 'commit'), numeric(at, 'reply[1]', 'commit')];
}

/** commit-turn.lua's answer: held (by the turn of output `by`), emitted (with the link it spliced), or null for a stale fence. */
export type CommitTurnReply =
  | { held: true; by: string; until: number; count: number }
  | { held: false; seq: number; at: number; link?: TurnLink }
  | null;

export function commitTurnReply(value: unknown): CommitTurnReply {
  if (value === null) return null;
  const [kind, a, b, c, d] = array(value, 'reply', 'commit-turn');
  if (kind === 'held')
    return {
      held: true,
      by: text(a, 'reply[1]', 'commit-turn'),
      until: numeric(b, 'reply[2]', 'commit-turn'),
      count: numeric(c, 'reply[3]', 'commit-turn'),
    };
  if (kind !== 'emitted') throw new ReplyShapeError('commit-turn', 'reply[0]', "'held' or 'emitted'", kind);
  const emitted = {
    held: false as const,
    seq: numeric(a, 'reply[1]', 'commit-turn'),
    at: numeric(b, 'reply[2]', 'commit-turn'),
  };
  if (c === '') return emitted;
  if (c !== 'followsUp' && c !== 'during' && c !== 'interrupts')
    throw new ReplyShapeError('commit-turn', 'reply[3]', "'', 'followsUp', 'during' or 'interrupts'", c);
  return { ...emitted, link: { field: c, id: text(d, 'reply[4]', 'commit-turn') } };
}

/** trim.lua: how many records one batch removed, and where the next starts ('' when done). */
export function trimReply(value: unknown): [removed: number, next: string] {
  const [removed, next] = array(value, 'reply', 'trim');
  return [numeric(removed, 'reply[0]', 'trim'), text(next, 'reply[1]', 'trim')];
}

/** turn-done.lua: `unknown`, or what the turn was and its session's held count. */
export function turnDoneReply(
  value: unknown,
): { result: 'unknown' } | { result: 'closed' | 'already'; sessionKey: string; held: number } {
  const [result, sessionKey, held] = array(value, 'reply', 'turn-done');
  if (result === 'unknown') return { result };
  if (result !== 'closed' && result !== 'already')
    throw new ReplyShapeError('turn-done', 'reply[0]', "'unknown', 'closed' or 'already'", result);
  return {
    result,
    sessionKey: text(sessionKey, 'reply[1]', 'turn-done'),
    held: numeric(held, 'reply[2]', 'turn-done'),
  };
}

/** turns.lua (`one`, `open`): per session its open turn's output id ('' when none), when it opened and ends, and its held count. */
export function turnsReply(
  value: unknown,
): Array<[sessionKey: string, outputId: string, openedAt: number, until: number, held: number]> {
  return array(value, 'reply', 'turns').map((view, i) => {
    const at = `reply[${i}]`;
    const [sessionKey, outputId, openedAt, until, held] = array(view, at, 'turns');
    return [
      text(sessionKey, `${at}[0]`, 'turns'),
      text(outputId, `${at}[1]`, 'turns'),
      numeric(openedAt, `${at}[2]`, 'turns'),
      numeric(until, `${at}[3]`, 'turns'),
      numeric(held, `${at}[4]`, 'turns'),
    ];
  });
}

/** stats.lua: live claim keys, claims evicted, live groups, groups evicted, then evictions per claim space asked. */
export function statsReply(value: unknown): number[] {
  return listOf(numeric)(value, 'reply', 'stats');
}

/** A value the reader takes as text whether the script sent digits as a string or a number (`String(x)` before). */
const textual: Decoder<string> = (value, at, script) =>
  typeof value === 'number' ? String(value) : text(value, at, script);

/** shard-pending.lua: the shard's life, then stream entries after the cursor (id, then field-value pairs). */
export function shardPendingReply(
  value: unknown,
): [life: string, entries: Array<[streamId: string, fields: string[]]>] {
  const [life, entries] = array(value, 'reply', 'shard-pending');
  return [
    textual(life, 'reply[0]', 'shard-pending'),
    array(entries, 'reply[1]', 'shard-pending').map((found, i) => {
      const [streamId, fields] = array(found, `reply[1][${i}]`, 'shard-pending');
      return [
        text(streamId, `reply[1][${i}][0]`, 'shard-pending'),
        texts(fields, `reply[1][${i}][1]`, 'shard-pending'),
      ];
    }),
  ];
}

/** append-drained.lua: the cursor now (life, seq, id), and each record's id with its global seq. */
export function appendDrainedReply(value: unknown): [life: string, seq: number, id: string, seqs: Map<string, number>] {
  const [life, seq, id, pairs] = array(value, 'reply', 'append-drained');
  const flat = array(pairs, 'reply[3]', 'append-drained');
  const seqs = new Map<string, number>();
  for (let j = 0; j + 1 < flat.length; j += 2)
    seqs.set(
      textual(flat[j], `reply[3][${j}]`, 'append-drained'),
      numeric(flat[j + 1], `reply[3][${j + 1}]`, 'append-drained'),
    );
  return [
    textual(life, 'reply[0]', 'append-drained'),
    numeric(seq, 'reply[1]', 'append-drained'),
    textual(id, 'reply[2]', 'append-drained'),
    seqs,
  ];
}

/** renew-life.lua: the life now. */
export function renewLifeReply(value: unknown): string {
  return text(value, 'reply', 'renew-life');
}

/** trail-find.lua: pairs of entry id and entry JSON. */
export function trailFindReply(value: unknown): Array<[id: string, json: string]> {
  const flat = texts(value, 'reply', 'trail-find');
  const found: Array<[string, string]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) found.push([flat[i]!, flat[i + 1]!]);
  return found;
}

/** conversation.lua's first element: the activation override's JSON (null when none), the dropped count, then the kept entries oldest first. */
export function conversationReply(
  value: unknown,
  at = 'reply',
  script = 'conversation',
): [activation: string | null, dropped: number, entries: string[]] {
  const [activation, dropped, ...entries] = array(value, at, script);
  return [
    activation === null ? null : text(activation, `${at}[0]`, script),
    numeric(dropped, `${at}[1]`, script),
    entries.map((entry, i) => text(entry, `${at}[${i + 2}]`, script)),
  ];
}

/** conversation.lua: the conversation (`conversationReply`), the live revisions' JSON oldest first, the takeover (`<since> <until>`, null when none). */
export type ConversationStateReply = [
  conversation: ReturnType<typeof conversationReply>,
  revisions: string[],
  takeover: string | null,
];

export function conversationStateReply(value: unknown, at = 'reply', script = 'conversation'): ConversationStateReply {
  const [conversation, revisions, takeover] = array(value, at, script);
  return [
    conversationReply(conversation, `${at}[0]`, script),
    texts(revisions, `${at}[1]`, script),
    takeover === null ? null : text(takeover, `${at}[2]`, script),
  ];
}

/** revise.lua: whether the revision was recorded, found in a buffer, and changed the kept context. */
export function reviseReply(value: unknown): { recorded: boolean; buffered: boolean; context: boolean } {
  const [recorded, buffered, context] = array(value, 'reply', 'revise').map((flag, i) =>
    integer(flag, `reply[${i}]`, 'revise'),
  );
  return { recorded: recorded === 1, buffered: buffered === 1, context: context === 1 };
}

/** hold-takeover.lua: whether one started, the takeover, and the one it ended (`<since> <until>` each). */
export function holdTakeoverReply(value: unknown): [started: boolean, takeover: string, ended: string | null] {
  const [started, takeover, ended] = array(value, 'reply', 'hold-takeover');
  return [
    integer(started, 'reply[0]', 'hold-takeover') === 1,
    text(takeover, 'reply[1]', 'hold-takeover'),
    ended === null ? null : text(ended, 'reply[2]', 'hold-takeover'),
  ];
}

/** spend-budgets.lua: empty when spent, else each budget without room and when it has room again. */
export function spendReply(value: unknown): Array<{ key: string; retryAt: number }> {
  const flat = array(value, 'reply', 'spend-budgets');
  const out: Array<{ key: string; retryAt: number }> = [];
  for (let i = 0; i < flat.length; i += 2)
    out.push({
      key: text(flat[i], `reply[${i}]`, 'spend-budgets'),
      retryAt: numeric(flat[i + 1], `reply[${i + 1}]`, 'spend-budgets'),
    });
  return out;
}

/** end-takeover.lua: the takeover ended (`<since> <until>`), null when none was. */
export function endTakeoverReply(value: unknown): string | null {
  return value === null ? null : text(value, 'reply', 'end-takeover');
}
