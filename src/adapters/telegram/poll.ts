import { request } from 'undici';
import { PollError, type PollSpec, type Polled } from '../../events/connection.js';

/** The update types the adapter turns into events (what `allowed_updates` asks for). */
export const ALLOWED_UPDATES = ['message', 'edited_message', 'channel_post', 'edited_channel_post', 'callback_query'];

export interface TelegramPollOptions {
  apiBaseUrl: string;
  botToken: string;
  /** Seconds Telegram holds a poll open when nothing is waiting (`getUpdates` `timeout`). */
  timeoutS: number;
  leaseMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
}

/**
 * Telegram long polling (`getUpdates`): each poll starts at the stored offset (the update after
 * the last one recorded), so Telegram keeps everything not yet confirmed; the new offset, the
 * last update_id + 1, is stored by the poller only once those updates are recorded. A webhook
 * still set makes Telegram answer 409: the error names `deleteWebhook`.
 */
export function telegramPoll(options: TelegramPollOptions): PollSpec {
  const { apiBaseUrl, botToken, timeoutS } = options;
  const hide = (text: string) => text.replaceAll(botToken, '<token>');
  return {
    transport: 'poll',
    botId: botToken.split(':')[0] ?? '',
    leaseMs: options.leaseMs,
    reconnectMinMs: options.reconnectMinMs,
    reconnectMaxMs: options.reconnectMaxMs,
    // Telegram answers an idle poll after `timeout` seconds; one still open 15 s later is stalled.
    stallMs: (timeoutS + 15) * 1000,
    async next(cursor, signal): Promise<Polled> {
      const query = new URLSearchParams({
        timeout: String(timeoutS),
        allowed_updates: JSON.stringify(ALLOWED_UPDATES),
      });
      if (cursor !== undefined) query.set('offset', cursor);
      let status: number;
      let text: string;
      try {
        const response = await request(`${apiBaseUrl}/bot${botToken}/getUpdates?${query}`, {
          method: 'GET',
          signal,
          headersTimeout: (timeoutS + 15) * 1000,
          bodyTimeout: (timeoutS + 15) * 1000,
        });
        status = response.statusCode;
        text = await response.body.text();
      } catch (error) {
        if (signal.aborted) throw error;
        throw new PollError(`getUpdates failed: ${hide((error as Error).message)}`);
      }
      let answer: { ok?: unknown; result?: unknown; description?: unknown } | undefined;
      try {
        answer = JSON.parse(text) as typeof answer;
      } catch {
        answer = undefined;
      }
      const description = typeof answer?.description === 'string' ? hide(answer.description) : `HTTP ${status}`;
      if (status === 409) {
        throw new PollError(
          `getUpdates refused (409): ${description}`,
          'a webhook is still set for this bot: call deleteWebhook (https://api.telegram.org/bot<token>/deleteWebhook) or use "transport": "webhook"',
        );
      }
      if (status === 429) {
        // Flood control: Telegram says how long to wait (parameters.retry_after, seconds).
        const after = Number(
          (answer as { parameters?: { retry_after?: unknown } } | undefined)?.parameters?.retry_after,
        );
        throw new PollError(
          `getUpdates refused (429): ${description}`,
          undefined,
          Number.isFinite(after) && after > 0 ? Math.min(after, 3600) * 1000 : undefined,
        );
      }
      if (status === 401 || status === 404)
        throw new PollError(
          `getUpdates refused (${status}): ${description}`,
          "the channel's botToken is wrong or revoked",
        );
      if (status !== 200 || answer?.ok !== true || !Array.isArray(answer.result))
        throw new PollError(`getUpdates answered ${status}: ${description}`);
      // The offset confirms every update below it (core.telegram.org/bots/api#getupdates): an
      // answer carrying some anyway (a server answering from behind) is not taken in again, and
      // the offset only ever moves forward, so a restart never reads those updates again either.
      const kept = Number(cursor);
      const offset = cursor !== undefined && Number.isSafeInteger(kept) ? kept : undefined;
      const bodies: Buffer[] = [];
      let next = offset;
      for (const update of answer.result as unknown[]) {
        const id = (update as { update_id?: unknown } | null)?.update_id;
        const known = typeof id === 'number' && Number.isSafeInteger(id);
        if (known && offset !== undefined && id < offset) continue;
        bodies.push(Buffer.from(JSON.stringify(update)));
        if (known && (next === undefined || id + 1 > next)) next = id + 1;
      }
      return { bodies, cursor: next === undefined ? cursor : String(next) };
    },
  };
}
