import {
  outboxRecord,
  type LeasedBatch,
  type OutboxDraft,
  type OutboxRecord,
  type TurnCommit,
  type TurnDone,
  type TurnLink,
  type TurnRule,
  type TurnView,
} from '../../core/ports/index.js';
import { clock } from './codec.js';
import type { ConnectionLogger, ScriptedRedis } from './connections.js';
import { committedDespiteLostAnswer } from './lost-answer.js';
import { commitTurnReply, turnDoneReply, turnsReply } from './replies.js';

/** The link a committed body ends with (`withLink`), for a commit whose answer was lost. */
export function linkIn(body: string): TurnLink | undefined {
  const match = /,"(followsUp|during|interrupts)":"([^"\\]+)"\}$/.exec(body);
  return match ? { field: match[1] as TurnLink['field'], id: match[2] as string } : undefined;
}

/**
 * Agent turns on Redis (docs/turns.md): each step one script (commit-turn, turn-done, turns), on
 * the keys lua/include/held.lua lists, so every instance sees one turn per session.
 */
export class RedisTurns {
  constructor(
    private readonly client: ScriptedRedis,
    private readonly prefix: string,
    private readonly logger: ConnectionLogger | undefined,
    /** Resolves once the outbox tail listens (a commit must not overtake its start). */
    private readonly ready: () => Promise<void>,
    private readonly outboxGet: (id: string) => Promise<OutboxRecord | undefined>,
    private readonly held: () => Promise<void>,
  ) {}

  /** A commit that ran but whose answer was lost answers with its record, as `commit` does (lost-answer.ts). */
  async commit(batch: LeasedBatch, draft: OutboxDraft, now: number, rule: TurnRule): Promise<TurnCommit | undefined> {
    let heldBy: TurnCommit | undefined;
    let link: TurnLink | undefined;
    const record = await committedDespiteLostAnswer(
      async () => {
        const done = await this.commitOnce(batch, draft, now, rule);
        if (done?.held) heldBy = done;
        else if (done) link = done.link;
        return done && !done.held ? done.record : undefined;
      },
      () => (heldBy ? Promise.resolve(undefined) : this.outboxGet(draft.id)),
      this.logger,
      batch.sessionKey,
    );
    if (heldBy) return heldBy;
    if (!record) return undefined;
    link ??= linkIn(record.body);
    return link ? { held: false, record, link } : { held: false, record };
  }

  private async commitOnce(
    batch: LeasedBatch,
    draft: OutboxDraft,
    now: number,
    rule: TurnRule,
  ): Promise<TurnCommit | undefined> {
    await this.ready();
    const { body, contextUpTo, ...head } = draft;
    const reply = commitTurnReply(
      await this.client.aiCommitTurn(
        this.prefix,
        batch.debounceKey,
        batch.sessionKey,
        batch.fence,
        batch.parts.length,
        clock(now),
        draft.id,
        draft.sessionKey,
        Math.floor(draft.createdAt),
        draft.state,
        JSON.stringify(head),
        body,
        draft.type,
        rule.mode,
        rule.maxMs,
        rule.maxHeld,
        contextUpTo === undefined ? '' : String(contextUpTo),
      ),
    );
    if (!reply) return undefined;
    await this.held();
    if (reply.held) return { held: true, by: reply.by, until: reply.until, count: reply.count };
    const { seq, at, link } = reply;
    const linked = link ? `${body.slice(0, body.lastIndexOf('}'))},"${link.field}":"${link.id}"}` : body;
    const record = outboxRecord(
      { ...draft, body: linked },
      seq,
      0,
      draft.createdAt,
      draft.state === 'pending' ? at : undefined,
    );
    return link ? { held: false, record, link } : { held: false, record };
  }

  async done(outputId: string, now: number, sessionKey = ''): Promise<TurnDone> {
    return turnDoneReply(await this.client.aiTurnDone(this.prefix, outputId, clock(now), sessionKey));
  }

  async of(sessionKey: string, now: number): Promise<TurnView> {
    const [view] = this.views(await this.client.aiTurns(this.prefix, 'one', sessionKey, clock(now)));
    return view as TurnView;
  }

  async open(now: number, limit: number): Promise<TurnView[]> {
    return this.views(await this.client.aiTurns(this.prefix, 'open', Math.max(1, Math.floor(limit)), clock(now)));
  }

  async count(now: number): Promise<number> {
    return Number(await this.client.aiTurns(this.prefix, 'count', 0, clock(now)));
  }

  private views(reply: unknown): TurnView[] {
    return turnsReply(reply).map(([sessionKey, outputId, openedAt, until, held]) =>
      outputId === '' ? { sessionKey, open: false, held } : { sessionKey, open: true, outputId, openedAt, until, held },
    );
  }
}
