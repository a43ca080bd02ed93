import type { Logger } from 'pino';
import type { TakeoverOptions } from '../config/second-thoughts.js';
import type { Clock } from '../core/clock.js';
import type { Conversations } from '../core/ports/index.js';
import type { Takeover } from '../events/context.js';
import type { InboundEvent } from '../events/inbound.js';
import { secondThoughtEvent, type SecondThoughtPlace } from '../events/second-thought.js';

export interface TakeoverStageOptions {
  clock: Clock;
  logger: Logger;
  store: Pick<Conversations, 'holdTakeover' | 'endTakeover' | 'conversation'>;
  options: TakeoverOptions;
  /** Admit a `chat.takeover` event: it reaches the outbox as any output does, once (its id is its once-key). */
  tell(event: InboundEvent): Promise<void>;
}

/**
 * A human taking a session over (contract §13). A message of our bot's own account that did
 * not go through us, or of an operator, holds the session for `holdMs`, at most `maxMs` from
 * the start; while it lasts, the activation stage keeps the session's batches as context. The
 * start and the end are told as `chat.takeover`. The end is timed by the instance that last
 * held it; should that instance stop, the session's next flush on any instance ends it.
 */
export function createTakeovers(stage: TakeoverStageOptions) {
  const { store, clock, options } = stage;
  const hold = { holdMs: options.holdMs, maxMs: options.maxMs };
  const timers = new Map<string, { handle: unknown; place: SecondThoughtPlace; since: number }>();
  const operators = new Set(options.operators);

  /** Whether the sender of a message is an operator: by `<namespace>:<id>`, or by id in any namespace. */
  function isOperator(event: Pick<InboundEvent, 'namespace' | 'sender'>): boolean {
    return (
      operators.size > 0 && (operators.has(`${event.namespace}:${event.sender.id}`) || operators.has(event.sender.id))
    );
  }

  /** A human spoke in a session at `at` (ms): start or extend its takeover. */
  async function spoke(place: SecondThoughtPlace, at: number, custom = hold): Promise<Takeover> {
    const now = clock.now();
    const change = await store.holdTakeover(place.sessionKey, at, custom, now);
    if (change.ended) await told(place, change.ended, false);
    if (change.started) await told(place, change.takeover, true);
    arm(place, change.takeover);
    return change.takeover;
  }

  /** End a session's takeover by hand (undefined: there was none). */
  async function end(place: SecondThoughtPlace): Promise<Takeover | undefined> {
    const ended = await store.endTakeover(place.sessionKey, clock.now());
    if (!ended) return undefined;
    disarm(place.sessionKey);
    await told(place, { since: ended.since, until: Math.min(ended.until, clock.now()) }, false, ended.since);
    return ended;
  }

  /** A takeover found run out (a flush read it): end it here, once, whichever instance timed it. */
  async function due(place: SecondThoughtPlace, takeover: Takeover): Promise<void> {
    const ended = await store.endTakeover(place.sessionKey, clock.now(), takeover.since);
    if (ended) await told(place, ended, false);
  }

  async function view(sessionKey: string): Promise<Takeover | undefined> {
    return (await store.conversation(sessionKey, clock.now(), { context: false })).takeover;
  }

  /** Tell a start or an end; an end's once-key names its start, so it is told once however it came. */
  function told(place: SecondThoughtPlace, takeover: Takeover, active: boolean, since = takeover.since) {
    const onceKey = `takeover:${place.sessionKey}:${since}:${active ? 'start' : 'end'}`;
    return stage.tell(
      secondThoughtEvent(place, { type: 'chat.takeover', active, until: takeover.until }, onceKey, clock.now()),
    );
  }

  function arm(place: SecondThoughtPlace, takeover: Takeover): void {
    disarm(place.sessionKey);
    const handle = clock.setTimeout(() => void fire(place, takeover.since), Math.max(0, takeover.until - clock.now()));
    timers.set(place.sessionKey, { handle, place, since: takeover.since });
  }

  function disarm(sessionKey: string): void {
    const timer = timers.get(sessionKey);
    if (timer) clock.clearTimeout(timer.handle);
    timers.delete(sessionKey);
  }

  /** Its time came: end it, or (another instance extended it) wait for its new end. */
  async function fire(place: SecondThoughtPlace, since: number): Promise<void> {
    timers.delete(place.sessionKey);
    try {
      const ended = await store.endTakeover(place.sessionKey, clock.now(), since);
      if (ended) return await told(place, ended, false);
      const now = await view(place.sessionKey);
      if (now && now.since === since && now.until > clock.now()) arm(place, now);
    } catch (error) {
      // The session's next flush ends it instead.
      stage.logger.warn({ sessionKey: place.sessionKey, err: error }, 'takeover end failed; the next flush ends it');
    }
  }

  function close(): void {
    for (const sessionKey of [...timers.keys()]) disarm(sessionKey);
  }

  return { isOperator, spoke, end, due, view, close };
}

export type Takeovers = ReturnType<typeof createTakeovers>;
