import { request } from 'undici';
import type { SocketDial, SocketFrame } from '../../events/connection.js';

/** Frames larger than this are never control frames (hello, disconnect): they are envelopes. */
const CONTROL_MAX = 16 * 1024;
/** What a person must do when Slack turned Socket Mode off for the app. */
const LINK_DISABLED =
  'Slack turned Socket Mode off for this app (disconnect reason link_disabled): turn it on again at api.slack.com/apps > your app > Socket Mode, or use the Events API ("transport": "webhook")';

export interface SlackSocketOptions {
  appToken: string;
  apiBaseUrl: string;
  leaseMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
}

/**
 * Slack Socket Mode: each connection's URL comes from `apps.connections.open` (app-level
 * `xapp-` token). Slack sends `hello`, then envelopes `{envelope_id, type, payload,
 * retry_attempt}`; an `events_api` envelope's payload is what the Events API would POST, so it
 * goes through the same normalize (a retry is refused as a duplicate by its event's id). Every
 * envelope is answered `{envelope_id}` once recorded; one not answered within 3 s is sent again.
 * `disconnect` (api.slack.com/apis/socket-mode: `warning` about 10 s before Slack refreshes the
 * socket, `refresh_requested`) asks for the next socket, opened before this one closes (at once
 * after a healthy socket, else after the backoff); `link_disabled` means Socket Mode was turned
 * off for the app: said as an error, and asked again only after `reconnectMaxMs`.
 */
export function slackSocket(options: SlackSocketOptions): {
  dial: SocketDial;
  frame(frame: Buffer): SocketFrame | undefined;
} {
  const hide = (text: string) => text.replaceAll(options.appToken, '<token>');
  return {
    dial: {
      url: '',
      headers: {},
      reconnectMinMs: options.reconnectMinMs,
      reconnectMaxMs: options.reconnectMaxMs,
      leaseMs: options.leaseMs,
      async open(signal) {
        const response = await request(`${options.apiBaseUrl}/apps.connections.open`, {
          method: 'POST',
          signal,
          headers: { authorization: `Bearer ${options.appToken}`, 'content-type': 'application/x-www-form-urlencoded' },
        });
        const text = await response.body.text();
        let answer: { ok?: unknown; url?: unknown; error?: unknown } | undefined;
        try {
          answer = JSON.parse(text) as typeof answer;
        } catch {
          answer = undefined;
        }
        if (answer?.ok === true && typeof answer.url === 'string' && /^wss?:\/\//.test(answer.url)) return answer.url;
        const why = typeof answer?.error === 'string' ? answer.error : `HTTP ${response.statusCode}`;
        const hint =
          why === 'invalid_auth' || why === 'not_allowed_token_type'
            ? ': appToken must be the app-level token (xapp-...) with connections:write'
            : '';
        throw new Error(hide(`apps.connections.open failed: ${why}${hint}`));
      },
    },
    frame(frame) {
      const body = JSON.parse(frame.toString('utf8')) as unknown;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
      const message = body as Record<string, unknown>;
      if (frame.length <= CONTROL_MAX && message.type === 'hello') return { kind: 'meta', heartbeat: true };
      if (frame.length <= CONTROL_MAX && message.type === 'disconnect') {
        const reason = String(message.reason ?? 'disconnect');
        return { kind: 'refresh', reason, ...(reason === 'link_disabled' ? { disabled: LINK_DISABLED } : {}) };
      }
      if (typeof message.envelope_id !== 'string') return undefined; // not Slack's: the pipeline refuses it
      const ack = JSON.stringify({ envelope_id: message.envelope_id });
      // Only events carry messages; slash commands and interactions are acknowledged and not kept.
      if (message.type !== 'events_api' || typeof message.payload !== 'object' || message.payload === null)
        return { kind: 'envelope', ack };
      return { kind: 'envelope', ack, body: Buffer.from(JSON.stringify(message.payload)) };
    },
  };
}
