import type { ScriptedRedis } from './connections.js';
import { commitReply, type CommitReply } from './replies.js';

/** commit.lua's arguments after the key prefix. */
export type CommitArgs = [
  debounceKey: string,
  sessionKey: string,
  fence: number,
  parts: number,
  now: string,
  id: string,
  recordSession: string,
  createdAt: number,
  state: string,
  draft: string,
  unlessHeld: '' | 'turns',
  contextUpTo: string,
  valuesTtlMs: number,
  values: number,
  ...namesAndValues: string[],
];

/** At most this many commits in one script call. */
const MAX_PER_CALL = 64;

interface Pending {
  args: CommitArgs;
  resolve: (reply: CommitReply) => void;
  reject: (error: unknown) => void;
}

/**
 * Commits asked for in the same turn of the event loop go to Redis in one script call
 * (commit-many.lua): the batches one claim took are flushed in parallel and usually finish
 * together, and one EVALSHA for all of them saves Redis a command and a round trip each. Each
 * keeps its own fence and its own answer; a call that fails fails each of its commits (the
 * store then looks each one up in the outbox, as for a single commit whose answer was lost).
 */
export class CommitBatcher {
  private queue: Pending[] = [];
  private scheduled = false;

  constructor(
    private readonly client: ScriptedRedis,
    private readonly prefix: string,
  ) {}

  commit(args: CommitArgs): Promise<CommitReply> {
    return new Promise<CommitReply>((resolve, reject) => {
      this.queue.push({ args, resolve, reject });
      if (this.queue.length >= MAX_PER_CALL) this.send();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.send();
        });
      }
    });
  }

  private send(): void {
    const items = this.queue.splice(0);
    if (items.length === 0) return;
    const call =
      items.length === 1
        ? this.client.aiCommit(this.prefix, ...items[0]!.args).then((reply) => [reply])
        : this.client.aiCommitMany(this.prefix, items.length, ...items.flatMap((item) => item.args));
    call.then(
      (replies) => {
        const answers = Array.isArray(replies) ? replies : [];
        items.forEach((item, i) => {
          try {
            item.resolve(commitReply(answers[i] ?? null));
          } catch (error) {
            item.reject(error);
          }
        });
      },
      (error: unknown) => {
        for (const item of items) item.reject(error);
      },
    );
  }
}
