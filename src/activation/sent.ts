import type { Clock } from '../core/clock.js';
import type { SharedValues } from '../core/ports/index.js';
import type { SentMessage } from '../events/context.js';
import type { InboundEvent } from '../events/inbound.js';

/**
 * The messages our bots sent, remembered in the store for `ttlMs` (every instance sees them), so
 * that a reply quoting one only by its id addresses the bots. Keyed by the receiving bot too:
 * OneBot numbers messages per bot, and a reply quotes the id its own bot gave the message.
 */
export class SentMessages {
  constructor(
    private readonly store: Pick<SharedValues, 'sharedGet' | 'sharedPut'>,
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  /** What the platform reported our bots sent (OneBot `message_sent`). */
  async remember(messages: readonly SentMessage[]): Promise<void> {
    const now = this.clock.now();
    await Promise.all(
      messages.map((message) =>
        this.store.sharedPut(keyOf(message.namespace, message.botId, message.messageId), '1', this.ttlMs, now),
      ),
    );
  }

  /**
   * A message of one of our bots as another of our bots received it (dropped by the loop guard):
   * remembered under the id that bot gives it, which is what its copy of a reply quotes.
   */
  async rememberEcho(event: InboundEvent): Promise<void> {
    const messageId = event.fields?.message_id ?? event.platformId;
    if (messageId === undefined) return;
    await this.remember([
      { namespace: event.namespace, messageId, ...(event.botId === undefined ? {} : { botId: event.botId }) },
    ]);
  }

  /** Whether the message `messageId`, as `botId` names it, is one our bots sent (undefined: not known to be). */
  async has(namespace: string, botId: string | undefined, messageId: string): Promise<boolean | undefined> {
    return (await this.store.sharedGet(keyOf(namespace, botId, messageId), this.clock.now())) === undefined
      ? undefined
      : true;
  }
}

const keyOf = (namespace: string, botId: string | undefined, messageId: string) =>
  `sent:${namespace}:${botId ?? ''}:${messageId}`;
