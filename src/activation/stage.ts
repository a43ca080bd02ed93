import type { ActivationMode, ActivationOptions, Budget, ContextOptions } from '../config/activation.js';
import type { Clock } from '../core/clock.js';
import type { Budgets, ConversationRead, Conversations, LeasedBatch } from '../core/ports/index.js';
import { spendBudgets, type BudgetVerdict } from './budgets.js';
import type {
  Addressed,
  ContextMessage,
  ConversationState,
  Revision,
  SentMessage,
  Takeover,
} from '../events/context.js';
import type { SentMessages } from './sent.js';
import type { BufferedPart, InboundEvent, Trigger } from '../events/inbound.js';
import { addressRules, ourBot, triggerOf, type AddressRules, type OurBots, type SentLookup } from './addressed.js';

/** What activation reads of a channel's settings. */
export interface ActivationRules {
  activation: ActivationOptions;
  context: ContextOptions;
  budgets: readonly Budget[];
}

export interface ActivationStageOptions {
  clock: Clock;
  /**
   * A session's override and kept context (one read per batch, none when the claim brought it:
   * `LeasedBatch.conversation`), and the close of a batch as context.
   */
  store: Pick<Conversations, 'conversation' | 'keepContext'> & Pick<Budgets, 'spendBudgets' | 'deferBatch'>;
  /** Each channel's activation and context settings. */
  rulesOf(channel: string): ActivationRules;
  bots: OurBots;
  /** The messages our bots sent: remembered as reported and as echoed to our other bots, looked up by a quote's id. */
  sent: Pick<SentMessages, 'remember' | 'rememberEcho' | 'has'>;
  /** A batch's parts as its session's recalls and edits leave them (contract §13). @default as they are */
  revised?(parts: readonly BufferedPart[], revisions: readonly Revision[] | undefined): Promise<BatchContent>;
}

/** What of a batch is left to emit or keep once its session's recalls and edits apply. */
export interface BatchContent {
  /** `batch.parts` when nothing applies; never emitted: `recalled`. */
  parts: readonly BufferedPart[];
  recalled: readonly BufferedPart[];
}

/** A decision with the batch's content, and a takeover found run out (the pipeline ends it). */
export type FlushDecision = Decision & BatchContent & { takeoverDue?: Takeover };

/** A batch kept as context, and why. */
export interface NotAddressed {
  addressed: false;
  reason: string;
  /** Why, for the trail: not addressed (`context`), every message recalled, a human answering. @default 'context' */
  verdict?: 'context' | 'retracted' | 'human_active';
}

export type Decision = Addressed | NotAddressed;

const ALWAYS: Addressed = { addressed: true, trigger: 'always', context: [], contextDropped: 0, kept: [] };
const none: readonly BufferedPart[] = Object.freeze([]);
const UNLIMITED: BudgetVerdict = Object.freeze({ over: false });
/** A read of a conversation's override alone. */
const OVERRIDE_ONLY: ConversationRead = { context: false };

/**
 * Activation: which batches reach the agent (contract §12). Each message is marked as it
 * arrives (`mark`: whether it addresses our bots by itself); each batch is decided as it
 * flushes (`decide`), by the mode of its conversation: a batch in `mention` mode reaches the
 * agent when one of its parts is addressed, so a sender's fragments before the mention go
 * with it. A batch that does not is kept as the conversation's context (`keep`), which the
 * next output carries.
 */
export function createActivation(options: ActivationStageOptions) {
  const compiled = new Map<string, AddressRules>();
  const rulesOf = (channel: string): AddressRules => {
    let rules = compiled.get(channel);
    if (!rules) compiled.set(channel, (rules = addressRules(options.rulesOf(channel).activation)));
    return rules;
  };

  const sentLookup: SentLookup = (namespace, botId, messageId) => options.sent.has(namespace, botId, messageId);

  /**
   * Mark each message: `addressed` and `trigger` as its own content says, before `intake.use`
   * steps see it. A message one of our bots wrote, as another of ours received it, is remembered
   * instead (the loop guard drops it), so a reply to it is known.
   */
  function mark(events: readonly InboundEvent[], from = 0): Promise<void> | undefined {
    // In step while nothing waits (nearly every message): no promise per delivery.
    for (let i = from; i < events.length; i++) {
      const event = events[i]!;
      if (event.kind !== 'message') continue;
      if (options.bots.isOwnBot(event.namespace, event.sender.id)) {
        return markAfter(options.sent.rememberEcho(event), events, i + 1);
      }
      const found = triggerOf(event, rulesOf(event.channel), options.bots, sentLookup);
      if (found instanceof Promise) {
        return markAfter(
          found.then((trigger) => setTrigger(event, trigger)),
          events,
          i + 1,
        );
      }
      setTrigger(event, found);
    }
    return undefined;
  }

  async function markAfter(waiting: Promise<void>, events: readonly InboundEvent[], from: number): Promise<void> {
    await waiting;
    await mark(events, from);
  }

  async function decide(batch: LeasedBatch): Promise<FlushDecision> {
    const first = batch.parts[0]!.event;
    if (first.kind !== 'message') return { ...ALWAYS, parts: batch.parts, recalled: none };
    const now = options.clock.now();
    const rules = options.rulesOf(first.channel);
    const type = first.conversation.type;
    const configured = configuredMode(rules.activation, batch.sessionKey, type);
    // Found once: a mention known only now marks its event (`mentionsOursNow`), so a second
    // look at the same parts would no longer see it.
    const addressedFirst = addressedIn(batch.parts);
    // Only an output carries the context. A batch that is kept unless an override lets it through
    // (nothing in it addressed, a configured mode other than `always`: most of a busy group in
    // `mention` mode) reads the override alone, not the up to context.maxMessages kept entries.
    const kept = !addressedFirst && configured !== 'always';
    // Read with the lease by a store that can (Redis): complete unless the batch goes out and the
    // session keeps context, which only a read of its own brings.
    const leased = batch.conversation;
    let state =
      leased && (kept || !leased.keepsContext)
        ? leased.state
        : await options.store.conversation(batch.sessionKey, now, kept ? OVERRIDE_ONLY : undefined);
    // Second thoughts (contract §13): what was recalled or edited while the batch waited.
    const content: BatchContent =
      state.revisions && options.revised
        ? await options.revised(batch.parts, state.revisions)
        : { parts: batch.parts, recalled: none };
    // An edited message is marked again by its new text: edited to call the bot, it does.
    if (content.parts !== batch.parts) {
      await mark(content.parts.filter((part) => !batch.parts.includes(part)).map((part) => part.event));
    }
    const { takeover } = state;
    const seen = takeover && takeover.until <= now ? { ...content, takeoverDue: takeover } : content;
    if (content.parts.length === 0) {
      return { addressed: false, reason: 'every message of it was recalled', verdict: 'retracted', ...seen };
    }
    if (takeover && takeover.until > now) {
      const reason = `a human is answering in the conversation until ${new Date(takeover.until).toISOString()}`;
      return { addressed: false, reason, verdict: 'human_active', ...seen };
    }
    const addressedPart = content.parts === batch.parts ? addressedFirst : addressedIn(content.parts);
    const mode = state.activation?.[type] ?? configured;
    if (mode === 'never' || (mode === 'mention' && !addressedPart)) {
      return { addressed: false, reason: `not addressed: ${type} activation is ${mode}`, ...seen };
    }
    // Set to `always` at run time: the batch goes out after all, with its context.
    if (kept && !(leased && !leased.keepsContext)) state = await options.store.conversation(batch.sessionKey, now);
    // A step of `intake.use` may address a message none of the built-in triggers did: a rule of its own.
    const trigger = addressedPart ? (addressedPart.trigger ?? 'pattern') : 'always';
    // One flat object, written field by field: every batch that reaches the agent passes here.
    const decision = contextOf(state, rules.context, now) as FlushDecision & Addressed;
    decision.addressed = true;
    decision.trigger = trigger;
    decision.parts = content.parts;
    decision.recalled = content.recalled;
    if (seen !== content) decision.takeoverDue = takeover;
    return decision;
  }

  /** The first part addressed to our bots, by its mark or by a mention of a bot known only now. */
  function addressedIn(parts: readonly BufferedPart[]): InboundEvent | undefined {
    for (const part of parts) if (part.event.addressed === true || mentionsOursNow(part.event)) return part.event;
    return undefined;
  }

  /**
   * A mention of a bot of ours that had not yet delivered anything when the message arrived (its
   * own copy came a moment later): known at flush, so the batch is addressed after all.
   */
  function mentionsOursNow(event: InboundEvent): boolean {
    if (event.addressed !== false || event.trigger !== undefined || event.mentions.length === 0) return false;
    if (!event.mentions.some(ourBot(event, options.bots))) return false;
    event.trigger = 'mention';
    return true;
  }

  /** Close a batch as its conversation's context (false: the lease was lost, another instance owns it). */
  function keep(batch: LeasedBatch, parts: readonly BufferedPart[] = batch.parts): Promise<boolean> {
    const first = batch.parts[0]!.event;
    const { context } = options.rulesOf(first.channel);
    const messages = parts.map((part) => contextMessage(part.event));
    const keep = { maxMessages: context.maxMessages, ttlMs: context.maxAgeMs };
    return options.store.keepContext(batch, messages, options.clock.now(), keep);
  }

  /** Spend from the batch's budgets (none configured: nothing asked of the store, and no promise). */
  function budget(batch: LeasedBatch): Promise<BudgetVerdict> | BudgetVerdict {
    const { budgets } = options.rulesOf(batch.parts[0]!.event.channel);
    if (budgets.length === 0) return UNLIMITED;
    return spendBudgets(budgets, batch, options.clock.now(), (spends, now) => options.store.spendBudgets(spends, now));
  }

  /**
   * Hold a batch over a `merge` budget in its session's buffer of that budget (false: the lease
   * was lost). A batch of that buffer still over budget (another instance spent the room first)
   * goes back into it, ahead of what joined meanwhile, due again when the window allows.
   */
  function defer(batch: LeasedBatch, verdict: Extract<BudgetVerdict, { action: 'merge' }>): Promise<boolean> {
    return options.store.deferBatch(batch, verdict.deferKey, verdict.dueAt, options.clock.now());
  }

  return {
    mark,
    decide,
    keep,
    budget,
    defer,
    remember: (messages: readonly SentMessage[]) => options.sent.remember(messages),
  };
}

export type Activation = ReturnType<typeof createActivation>;

function setTrigger(event: InboundEvent, trigger: Trigger | undefined): void {
  event.addressed = trigger !== undefined;
  if (trigger) event.trigger = trigger;
  else delete event.trigger;
}

/**
 * A session's mode as configured: for the conversation, else the channel's for its type. One set
 * at run time (the store's override) comes before it.
 */
function configuredMode(activation: ActivationOptions, sessionKey: string, type: 'group' | 'private'): ActivationMode {
  return activation.conversations[sessionKey]?.[type] ?? activation[type];
}

/** The context an output carries: kept messages not too old, the newest within `maxChars`, oldest first. */
export function contextOf(
  state: ConversationState,
  limits: ContextOptions,
  now: number,
): Omit<Addressed, 'addressed' | 'trigger'> {
  const kept = state.context;
  if (kept.length === 0) return { context: [], contextDropped: state.dropped, kept };
  const since = now - limits.maxAgeMs;
  let chars = 0;
  let from = kept.length;
  while (from > 0) {
    const entry = kept[from - 1]!;
    if (entry.at < since || chars + entry.message.content.length > limits.maxChars) break;
    chars += entry.message.content.length;
    from -= 1;
  }
  const context = kept.slice(from).map((entry) => entry.message);
  // The newest message alone longer than maxChars: its start, cut to fit, rather than nothing.
  const newest = kept[kept.length - 1]!;
  if (context.length === 0 && newest.at >= since && limits.maxChars > 0) {
    context.push({ ...newest.message, content: `${newest.message.content.slice(0, limits.maxChars - 1)}…` });
    from = kept.length - 1;
  }
  return {
    context,
    contextDropped: state.dropped + from,
    contextUpTo: kept[kept.length - 1]!.seq,
    kept,
  };
}

/** One message as context: its text and its attachments by reference (context media is not downloaded). */
export function contextMessage(event: InboundEvent): ContextMessage {
  return {
    messageId: event.platformId ?? event.id,
    sender:
      event.sender.name === undefined ? { id: event.sender.id } : { id: event.sender.id, name: event.sender.name },
    content: event.text,
    timestamp: event.timestamp,
    media: event.media.flatMap((ref) => {
      const handle = ref.url ?? ref.ref;
      return handle === undefined ? [] : [{ type: ref.type ?? 'document', ref: handle }];
    }),
  };
}
