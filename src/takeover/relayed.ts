import type { Clock } from '../core/clock.js';
import type { SharedValues } from '../core/ports/index.js';

/**
 * How long a send relayed through us stands for its bot's reports: its report may come before
 * its answer names the message. Not ended by the answer: another send may be in flight (a
 * person's message in those seconds is taken for the agent's; their next one is not).
 */
const IN_FLIGHT_MS = 5_000;

/**
 * The messages our bots sent through us (contract §13): a message the bot's own account reports
 * sending (OneBot `message_sent`) that is not one of them was sent by a person, from the
 * account's own client. Kept in the store, so a send relayed on one instance is known on all.
 * A send whose answer has not come yet covers its bot's reports meanwhile: the report may come
 * first. A bot none of whose sends ever went through us (within `ttlMs`) is never taken for a
 * person: its agent answers through the platform itself.
 */
export class RelayedSends {
  constructor(
    private readonly store: Pick<SharedValues, 'sharedGet' | 'sharedPut'>,
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  /** A send action is about to go to the bot: its sends go through us. */
  async sending(namespace: string, botId: string | undefined): Promise<void> {
    const now = this.clock.now();
    await this.store.sharedPut(inFlight(namespace, botId), '1', IN_FLIGHT_MS, now);
    await this.store.sharedPut(through(namespace, botId), '1', this.ttlMs, now);
  }

  /** The bot answered a send with the message's id. */
  async sent(namespace: string, botId: string | undefined, messageId: string): Promise<void> {
    const now = this.clock.now();
    await this.store.sharedPut(relayed(namespace, botId, messageId), '1', this.ttlMs, now);
  }

  /**
   * Whether a message the bot's account reports sending may be the agent's: it went through us,
   * or the bot's sends do not go through us at all (an agent that answers through the platform
   * directly: its replies and a person's cannot be told apart, so none is taken for a person's).
   */
  async ours(namespace: string, botId: string | undefined, messageId: string): Promise<boolean> {
    const now = this.clock.now();
    if ((await this.store.sharedGet(through(namespace, botId), now)) === undefined) return true;
    if ((await this.store.sharedGet(relayed(namespace, botId, messageId), now)) !== undefined) return true;
    return (await this.store.sharedGet(inFlight(namespace, botId), now)) !== undefined;
  }
}

const through = (namespace: string, botId: string | undefined) => `relays:${namespace}:${botId ?? ''}`;
const inFlight = (namespace: string, botId: string | undefined) => `relaying:${namespace}:${botId ?? ''}`;
const relayed = (namespace: string, botId: string | undefined, messageId: string) =>
  `relayed:${namespace}:${botId ?? ''}:${messageId}`;
