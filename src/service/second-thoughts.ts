import type { Logger } from 'pino';
import type { Channels } from './channels.js';
import { messageDebounceKey } from './admission.js';
import type { Config } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { RecentMap } from '../core/recent.js';
import { turnBufferKey, type Store } from '../core/ports/index.js';
import type { Revision, SentMessage } from '../events/context.js';
import type { BufferedPart, InboundEvent } from '../events/inbound.js';
import type { SecondThoughtPlace } from '../events/second-thought.js';
import type { Admitted } from '../ingest/admit.js';
import type { Metrics } from '../metrics/index.js';
import type { ProcessedMessage } from '../events/output.js';
import { budgetBuffersOf } from '../activation/budgets.js';
import { localLedger, sharedLedger } from '../revise/ledger.js';
import { createRevisions, revisedParts } from '../revise/stage.js';
import { RelayedSends } from '../takeover/relayed.js';
import { createTakeovers } from '../takeover/stage.js';

/** Emitted message ids a store of one process remembers. */
const MAX_LEDGER_ENTRIES = 250_000;
/** Messages whose senders a process remembers for recalls that name none. */
const MAX_RECENT_SENDERS = 50_000;

export interface SecondThoughtParts {
  config: Config;
  channels: Channels;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Counts a ledger that failed to remember an output's ids. @default not counted */
  metrics?: Pick<Metrics, 'storeError'>;
  /** Admission of events the service makes itself (a takeover's start and end). */
  admit(events: readonly InboundEvent[], now: number): Promise<Admitted>;
  /** A buffer admitted is due then. */
  due(deadline: number): void;
}

/**
 * Second thoughts (contract §13), composed: recalls and edits (the revise stage), a human taking
 * a session over (the takeover stage), and the sends relayed through us that tell our bots'
 * own messages from a person's.
 */
export function secondThoughts(parts: SecondThoughtParts) {
  const { config, channels, store, clock, logger } = parts;
  // The ids of emitted messages: in the store when instances share it, else in this process.
  const ledger = store.shared ? sharedLedger(store) : localLedger(MAX_LEDGER_ENTRIES);
  const revisions = createRevisions({ clock, store, ledger, options: config.revisions });
  const relayed = new RelayedSends(store, clock, config.revisions.ttlMs);

  /** Admit a takeover's start or end: it flushes at once, on whichever instance leases it. */
  async function tell(event: InboundEvent): Promise<void> {
    const admitted = await parts.admit([event], clock.now());
    for (const { deadline } of admitted.accepted) parts.due(deadline);
  }
  const takeovers = createTakeovers({ clock, logger, store, options: config.takeover, tell });

  /** Where a session's second thoughts are told: on `channelId`, else a channel of the session's namespace. */
  function placeOf(sessionKey: string, channelId?: string): SecondThoughtPlace {
    const id =
      channelId ?? channels.ids().find((each) => sessionKey.startsWith(`${channels.require(each).adapter.namespace}:`));
    const adapter = id === undefined ? undefined : channels.require(id).adapter;
    const namespace = adapter?.namespace ?? sessionKey.slice(0, Math.max(0, sessionKey.indexOf(':')));
    const rest = sessionKey.slice(namespace.length + 1);
    const conversation = rest.startsWith('group:')
      ? { type: 'group' as const, id: rest.slice('group:'.length) }
      : { type: 'private' as const, id: rest };
    return { channel: id ?? '', adapter: adapter?.name ?? '', namespace, sessionKey, conversation };
  }

  /** Messages our bots' accounts report sending: one not sent through us is a person answering. */
  async function humanSent(channelId: string, sent: readonly SentMessage[], now: number): Promise<void> {
    for (const message of sent) {
      if (message.sessionKey === undefined) continue;
      const person =
        message.byHuman === true || !(await relayed.ours(message.namespace, message.botId, message.messageId));
      if (!person) continue;
      logger.info({ channel: channelId, sessionKey: message.sessionKey }, 'a person answers from the bot account');
      await takeovers.spoke(placeOf(message.sessionKey, channelId), now);
    }
  }

  /**
   * Who sent the messages this process admitted lately, by session and platform id: a recall
   * that names no sender (Discord's, a Slack deletion without `previous_message`) still finds
   * the buffer its message waits in. In this process only: a connection's events (Discord's
   * Gateway) all come to the instance that holds it.
   */
  const senders = new RecentMap<string, string>(MAX_RECENT_SENDERS);
  const sendersKey = (sessionKey: string, messageId: string) => `${sessionKey}\u0000${messageId}`;
  const revisionKeys = {
    seen(event: InboundEvent): void {
      if (event.kind !== 'message' || event.platformId === undefined || !config.revisions.enabled) return;
      senders.set(sendersKey(event.sessionKey, event.platformId), event.sender.id);
    },
    /** The buffers a recalled or edited message may wait in: its sender's, its session's held one, and its budgets'. */
    of(event: InboundEvent): string[] {
      const held = turnBufferKey(event.sessionKey);
      const ref = event.revises;
      const senderId = ref?.senderId ?? (ref && senders.get(sendersKey(event.sessionKey, ref.messageId)));
      if (senderId === undefined) return [held];
      const budgets = channels.get(event.channel)?.config.budgets ?? [];
      return [
        messageDebounceKey(event.sessionKey, senderId),
        held,
        ...budgetBuffersOf(budgets, event.sessionKey, event.namespace, senderId, event.channel),
      ];
    },
  };

  /** `GET`, `PUT` and `DELETE /v1/sessions/<key>/takeover`. */
  const byHand = {
    async view(sessionKey: string) {
      const takeover = await takeovers.view(sessionKey);
      return takeover && { active: takeover.until > clock.now(), ...takeover };
    },
    start: (sessionKey: string, holdMs: number) =>
      takeovers.spoke(placeOf(sessionKey), clock.now(), { holdMs, maxMs: config.takeover.maxMs }),
    end: (sessionKey: string) => takeovers.end(placeOf(sessionKey)),
  };

  function notRemembered(error: unknown, id: string): void {
    parts.metrics?.storeError('revisions');
    logger.warn({ err: error, id }, 'emitted ids not remembered; a later recall of them is a notice');
  }

  /**
   * An output's message ids remembered before its commit; a failure is logged and the output
   * commits nonetheless. In step with the ledger of this process, a promise with the store's.
   */
  function remember(built: Omit<ProcessedMessage, 'seq'>): Promise<void> | undefined {
    try {
      return revisions.emitted(built)?.catch((error: unknown) => notRemembered(error, built.id));
    } catch (error) {
      notRemembered(error, built.id);
      return undefined;
    }
  }

  return { revisions, takeovers, relayed, humanSent, revisionKeys, byHand, remember };
}

/** A batch's parts as its session's revisions leave them, each part known by every bot's id for it (a recall may name another bot's copy). */
export function revisedWithCopies(store: Pick<Store, 'correlation'>, clock: Clock) {
  return async (parts: readonly BufferedPart[], revisions: readonly Revision[] | undefined) => {
    const now = clock.now();
    const aliases = await Promise.all(
      parts.map(async (part) =>
        part.correlationKey === undefined
          ? []
          : ((await store.correlation(part.correlationKey, now))?.deliveries ?? []).flatMap((copy) =>
              copy.platformId === undefined ? [] : [copy.platformId],
            ),
      ),
    );
    return revisedParts(parts, revisions, aliases);
  };
}

export type SecondThoughts = ReturnType<typeof secondThoughts>;
