import type { Dispatcher } from 'undici';
import type { Channels } from './channels.js';
import type { Clock } from '../core/clock.js';
import { IntakeError, isIntakeError, RequestError } from '../core/errors.js';
import type { RelayAnswer, RelayedAction, Store } from '../core/ports/index.js';
import { httpAction } from '../connections/http-action.js';
import type { Links } from '../connections/links.js';
import type { SentMessage } from '../events/context.js';
import type { RelayedSends } from '../takeover/relayed.js';

export interface ActionParts {
  channels: Channels;
  /** The sockets of this instance. */
  links: Links;
  /** The bus of a shared store: other instances' connections, and actions relayed to them. */
  bus: Store['bus'];
  instance: string;
  clock: Clock;
  /** HTTP client of `apiUrl` actions. @default undici's global dispatcher */
  dispatcher?: Dispatcher;
  /** The most bytes an `apiUrl` answer may have, as a bot's socket frame may (`server.bodyLimitBytes`). */
  maxAnswerBytes: number;
  /** Remember the messages our bots sent through an action (activation's `remember`): a reply to one addresses them. */
  sent?(messages: readonly SentMessage[]): Promise<void>;
  /** The sends relayed through us (contract §13): what the bot's account reports sending otherwise was a person. */
  relayed?: Pick<RelayedSends, 'sending' | 'sent'>;
}

/** Where a bot action goes, and the answers this instance gives to actions relayed to it. */
export interface BotActions {
  /** `POST /v1/channels/<id>/actions/<action>`: through a socket here, another instance's, or `apiUrl`. */
  action(channel: string, action: string, params: Record<string, unknown>, botId: string | undefined): Promise<unknown>;
  /** Answer the actions other instances relay here; resolves to the function that stops it. */
  serveRelayed(): Promise<(() => void) | undefined>;
}

/**
 * Bot actions across instances: a OneBot HTTP channel's go to its `apiUrl`; a socket channel's to
 * the bot's socket on this instance, else to the instance holding it (over the store's bus),
 * which answers within the action's timeout or is reported gone.
 */
export function botActions(parts: ActionParts): BotActions {
  const { channels, links, bus, instance, clock } = parts;

  const local = (channel: string, action: string, params: Record<string, unknown>, botId: string | undefined) =>
    links.call(channel, action, params, botId, channels.require(channel).adapter.actionTimeoutMs ?? 10_000);

  /** The bot ids that can take actions on `channel`: here, and on the instances listed. */
  const connected = (channel: string, elsewhere: { botId: string }[]): string => {
    const ids = [...new Set([...links.actionBots(channel), ...elsewhere.map((view) => view.botId)])];
    return ids.length ? ids.join(', ') : 'none';
  };

  /** What a send answered: the message the bot sent, remembered before the caller has the answer (and can be replied to). */
  async function remembered(
    channelId: string,
    action: string,
    params: Record<string, unknown>,
    answer: unknown,
    botId: string | undefined,
  ) {
    const { adapter } = channels.require(channelId);
    const messageId = adapter.sentByAction?.(action, answer, { params, botId });
    const namespace = adapter.namespaceOfBot?.(botId) ?? adapter.namespace;
    if (messageId && parts.sent) await parts.sent([{ namespace, messageId, ...(botId ? { botId } : {}) }]);
    if (messageId) await parts.relayed?.sent(namespace, botId, messageId).catch(() => undefined);
    return answer;
  }

  /** A send about to go out: the bot's report of it, should it come before the answer, is ours. */
  async function sending(channelId: string, action: string, botId: string | undefined): Promise<void> {
    const { adapter } = channels.require(channelId);
    if (parts.relayed && adapter.sendsMessage?.(action))
      await parts.relayed.sending(adapter.namespaceOfBot?.(botId) ?? adapter.namespace, botId).catch(() => undefined);
  }

  return {
    async action(channelId, action, params, botId) {
      const { adapter } = channels.require(channelId);
      const timeoutMs = adapter.actionTimeoutMs ?? 10_000;
      const context = { channel: channelId, stage: 'connections' };
      if (adapter.actionApi) {
        const limits = { timeoutMs, maxBytes: parts.maxAnswerBytes };
        // The bot asked for, else the channel's one configured bot, else the one it heard from.
        const bot = botId ?? (adapter.botIds?.length === 1 ? adapter.botIds[0] : adapter.actionApi.bot?.());
        await sending(channelId, action, bot);
        const answer = await httpAction(adapter.actionApi, channelId, action, params, limits, parts.dispatcher, bot);
        return remembered(channelId, action, params, answer, bot);
      }
      // Actions are OneBot's: an adapter that takes them says how long one waits (actionTimeoutMs).
      if (!adapter.socketTransport || adapter.actionTimeoutMs === undefined) {
        throw new RequestError(
          'no_actions',
          404,
          `Channel "${channelId}" takes no actions: only a channel whose bots are connected by WebSocket ("transport": "ws-reverse" or "ws") or a OneBot HTTP channel with "apiUrl" does`,
          context,
        );
      }
      // The bot `local` picks: the one asked for, else the one connected longest.
      const picked = botId ?? links.actionBots(channelId)[0];
      await sending(channelId, action, picked);
      const here = await local(channelId, action, params, botId);
      if (here !== undefined) return remembered(channelId, action, params, here, picked);
      const elsewhere = bus
        ? (await bus.sharedConnections(clock.now())).filter(
            (view) =>
              view.instance !== instance &&
              view.state === 'open' &&
              view.channel === channelId &&
              view.role !== 'Event',
          )
        : [];
      const holder = elsewhere
        .sort((a, b) => a.connectedAt - b.connectedAt)
        .find((view) => botId === undefined || view.botId === botId);
      if (!holder || !bus) {
        const which = botId === undefined ? 'No bot is connected' : `Bot ${botId} is not connected`;
        throw new IntakeError(
          'bot_not_connected',
          404,
          `${which} on channel "${channelId}" for actions (connected: ${connected(channelId, elsewhere)})`,
          context,
        );
      }
      const relayed: RelayedAction = { channel: channelId, action, params, ...(botId === undefined ? {} : { botId }) };
      const answer = await bus.relayAction(holder.instance, relayed, timeoutMs + 1000);
      if (answer === 'unheard') {
        // The holder died (or its subscriber is reconnecting) since it last published its connections.
        const others = elsewhere.filter((view) => view.instance !== holder.instance);
        throw new IntakeError(
          'bot_not_connected',
          404,
          `Bot ${holder.botId} on channel "${channelId}" was held by instance ${holder.instance}, which no longer listens (stopped or died): retry once the bot has reconnected (connected: ${connected(channelId, others)})`,
          context,
        );
      }
      if (!answer) {
        throw new IntakeError(
          'action_timeout',
          504,
          `Instance ${holder.instance}, which holds bot ${holder.botId} on channel "${channelId}", did not answer "${action}" within ${timeoutMs} ms`,
          context,
        );
      }
      if (answer.ok) return remembered(channelId, action, params, answer.body, holder.botId);
      throw new IntakeError(answer.code, answer.status, answer.message, context);
    },

    async serveRelayed() {
      if (!bus) return undefined;
      return bus.serveActions(instance, async ({ channel, action, params, botId }): Promise<RelayAnswer> => {
        try {
          const body = await local(channel, action, params, botId);
          if (body === undefined) {
            const message = `Bot ${botId ?? ''} is no longer connected to instance ${instance} on channel "${channel}"`;
            return { ok: false, status: 404, code: 'bot_not_connected', message };
          }
          return { ok: true, body };
        } catch (error) {
          return isIntakeError(error)
            ? { ok: false, status: error.status, code: error.code, message: error.message }
            : { ok: false, status: 500, code: 'internal', message: (error as Error).message };
        }
      });
    },
  };
}
