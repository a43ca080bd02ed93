import { request } from 'undici';
import {
  DialError,
  type DialSession,
  type SessionIo,
  type SocketDial,
  type SocketFrame,
} from '../../events/connection.js';
import type { AdapterContext } from '../kit/access-token.js';
import { keptCursor } from '../kit/cursor.js';

// The Discord Gateway (discord.com/developers/docs/events/gateway): Hello (op 10) gives the
// heartbeat interval; we Identify (op 2) or Resume (op 6); heartbeats (op 1) are answered by
// ACKs (op 11), and a heartbeat due with the last one unanswered means a zombie connection;
// dispatches (op 0) carry a sequence number `s` that a Resume replays from.

export interface GatewayOptions {
  channel: string;
  botToken: string;
  intents: number;
  apiBaseUrl: string;
  /** A fixed Gateway URL (tests, a proxy); else asked of `GET /gateway/bot`. */
  gatewayUrl: string | undefined;
  helloTimeoutMs: number;
  leaseMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  context: AdapterContext;
  /** Our bot's user id, once READY said it. */
  identified(botUserId: string): void;
}

/** Where a session stands, kept in the store so a restart or another instance resumes it. */
interface Cursor {
  sessionId: string;
  seq: number | null;
  resumeUrl: string;
}

/** Close codes after which a retry cannot help: the settings must change. */
/** The dispatches that become events, recorded before the resume cursor passes them. */
const RECORDED: ReadonlySet<string> = new Set([
  'MESSAGE_CREATE',
  'MESSAGE_UPDATE',
  'MESSAGE_DELETE',
  'MESSAGE_DELETE_BULK',
]);

const FATAL = new Map<number, string>([
  [4004, 'Discord refused the botToken (4004 authentication failed)'],
  [4010, 'Discord says the shard is invalid (4010)'],
  [4011, 'Discord says this bot needs sharding (4011): it is in too many guilds for one connection'],
  [4012, 'Discord refused the Gateway API version (4012)'],
  [4013, "Discord refused the intents (4013 invalid intents): check the channel's intents"],
  [
    4014,
    'Discord refused a privileged intent (4014 disallowed intents): turn on Message Content (and any other privileged intent in intents) under Bot > Privileged Gateway Intents in the Developer Portal',
  ],
]);
/** Close codes after which the session cannot be resumed: identify anew. */
const NEW_SESSION = new Set([4007, 4009]);
/** Our own close to reconnect and resume: any code but 1000/1001, which end the session. */
const RESUME_CLOSE = 4900;
/** At most one Identify per this, per bot (Discord's identify rate limit: 1 per 5 s per shard bucket). */
const IDENTIFY_SPACING_MS = 5500;
/** Resumes answered INVALID_SESSION in a row after which the session is given up, resumable or not. */
const MAX_FAILED_RESUMES = 2;

const gatewayQuery = '?v=10&encoding=json';

/** The Gateway of one Discord channel: the socket URL to dial, and the session of each socket. */
export function discordGateway(options: GatewayOptions): { dial: SocketDial } {
  const { botToken, context } = options;
  const cursorKey = `discord:cursor:${options.channel}`;
  const hide = (text: string) => text.replaceAll(botToken, '<token>');
  let cursor: Cursor | undefined;
  let lastIdentifyAt = -Infinity;
  /** After an invalid session, no Identify before this (Discord: wait a random 1-5 s). */
  let identifyNotBefore = -Infinity;
  let failedResumes = 0;

  const kept = keptCursor<Cursor>(context, cursorKey, () => cursor);
  const save = (io: SessionIo) => kept.save(io);
  async function load(): Promise<void> {
    cursor = await kept.load((parsed) => typeof parsed.sessionId === 'string' && typeof parsed.resumeUrl === 'string');
  }

  async function gatewayUrl(signal: AbortSignal): Promise<string> {
    if (options.gatewayUrl) return options.gatewayUrl;
    const response = await request(`${options.apiBaseUrl}/gateway/bot`, {
      method: 'GET',
      signal,
      headers: { authorization: `Bot ${botToken}` },
    });
    const text = await response.body.text();
    let answer:
      | { url?: unknown; session_start_limit?: { remaining?: unknown; reset_after?: unknown }; message?: unknown }
      | undefined;
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      answer = undefined;
    }
    if (response.statusCode === 401) throw new Error('GET /gateway/bot answered 401: the botToken is wrong');
    if (response.statusCode !== 200 || typeof answer?.url !== 'string')
      throw new Error(hide(`GET /gateway/bot failed: HTTP ${response.statusCode}`));
    const limit = answer.session_start_limit;
    if (!cursor && limit && limit.remaining === 0) {
      // Identifying now would be refused: wait until the budget resets (reset_after, ms), then ask again.
      const resetMs = Math.max(0, Math.min(Number(limit.reset_after) || 0, 86_400_000));
      throw new DialError(
        `Discord's daily session starts are used up; asking again when they reset, in ${Math.ceil(resetMs / 1000)} s`,
        resetMs,
      );
    }
    return answer.url;
  }

  function session(io: SessionIo): DialSession {
    let heartbeat: unknown;
    let helloTimer: unknown = io.setTimeout(
      () => io.close(RESUME_CLOSE, 'no Hello from the Gateway'),
      options.helloTimeoutMs,
    );
    let acked = true;
    /** The highest sequence received (heartbeats carry it); `cursor.seq` moves only once a dispatch is recorded. */
    let received: number | null = cursor?.seq ?? null;
    let identifyTimer: unknown;
    /** A Resume was sent on this socket and not yet answered RESUMED. */
    let resuming = false;

    const send = (op: number, d: unknown) => io.send(JSON.stringify({ op, d }));
    const beat = (): void => {
      if (!acked) {
        io.close(RESUME_CLOSE, 'no heartbeat ACK: zombie connection');
        return;
      }
      acked = false;
      send(1, received);
    };
    const identify = (): void => {
      const wait = Math.max(lastIdentifyAt + IDENTIFY_SPACING_MS, identifyNotBefore) - io.now();
      if (wait > 0) {
        identifyTimer = io.setTimeout(identify, wait);
        return;
      }
      lastIdentifyAt = io.now();
      send(2, {
        token: botToken,
        intents: options.intents,
        properties: { os: process.platform, browser: 'agent-intake', device: 'agent-intake' },
      });
    };
    const advance = (seq: unknown): void => {
      if (typeof seq !== 'number' || !cursor) return;
      if (cursor.seq === null || seq > cursor.seq) {
        cursor.seq = seq;
        save(io);
      }
    };
    const forget = (): void => {
      cursor = undefined;
      received = null;
      failedResumes = 0;
      save(io);
    };

    return {
      frame(raw): SocketFrame | undefined {
        const message = JSON.parse(raw.toString('utf8')) as { op?: unknown; d?: unknown; s?: unknown; t?: unknown };
        const d = message.d as Record<string, unknown> | null | undefined;
        switch (message.op) {
          case 10: {
            io.clearTimeout(helloTimer);
            helloTimer = undefined;
            const interval = Number(d?.heartbeat_interval);
            if (!(interval > 0)) throw new Error('Hello without heartbeat_interval');
            const every = (): void => {
              beat();
              heartbeat = io.setTimeout(every, interval);
            };
            heartbeat = io.setTimeout(every, interval * io.random());
            if (cursor) {
              resuming = true;
              send(6, { token: botToken, session_id: cursor.sessionId, seq: cursor.seq });
            } else identify();
            return { kind: 'meta', heartbeat: false, intervalMs: interval };
          }
          case 11:
            acked = true;
            return { kind: 'meta', heartbeat: true };
          case 1:
            send(1, received);
            return { kind: 'meta', heartbeat: false };
          case 7:
            io.close(RESUME_CLOSE, 'the Gateway asked us to reconnect');
            return { kind: 'meta', heartbeat: false };
          case 9:
            // d: whether the session may be resumed. A Gateway that refuses every resume anyway
            // is not resumed forever: after two refused resumes, a new session.
            if (resuming) failedResumes++;
            resuming = false;
            if (d !== (true as unknown) || failedResumes >= MAX_FAILED_RESUMES) {
              forget();
              // discord.com/developers/docs/events/gateway#resuming: wait a random 1-5 s, then Identify.
              identifyNotBefore = io.now() + 1000 + Math.floor(io.random() * 4000);
            }
            io.close(RESUME_CLOSE, 'invalid session');
            return { kind: 'meta', heartbeat: false };
          case 0:
            break;
          default:
            return { kind: 'meta', heartbeat: false };
        }
        const seq = typeof message.s === 'number' ? message.s : undefined;
        if (seq !== undefined && (received === null || seq > received)) received = seq;
        if (message.t === 'RESUMED' || message.t === 'READY') {
          resuming = false;
          failedResumes = 0;
        }
        if (message.t === 'READY' && d) {
          const user = d.user as { id?: unknown } | undefined;
          const botId = typeof user?.id === 'string' ? user.id : undefined;
          if (typeof d.session_id === 'string' && typeof d.resume_gateway_url === 'string') {
            cursor = { sessionId: d.session_id, seq: seq ?? null, resumeUrl: d.resume_gateway_url };
            save(io);
          }
          if (botId) options.identified(botId);
          return { kind: 'meta', heartbeat: false, ...(botId ? { botId } : {}) };
        }
        // A message, and a recall or an edit of one (contract §13), is recorded before the cursor
        // moves past it; other dispatches move it now.
        if (typeof message.t === 'string' && RECORDED.has(message.t))
          return { kind: 'envelope', body: raw, recorded: () => advance(seq) };
        advance(seq);
        // A typing signal holds its sender's open buffer (contract §13): never replayed for its own sake.
        if (message.t === 'TYPING_START') return { kind: 'envelope', body: raw };
        return { kind: 'meta', heartbeat: false };
      },

      closed(code) {
        io.clearTimeout(heartbeat);
        io.clearTimeout(helloTimer);
        io.clearTimeout(identifyTimer);
        const fatal = FATAL.get(code);
        if (fatal) return { next: 'stop', why: fatal };
        if (NEW_SESSION.has(code)) forget();
        return { next: 'retry' };
      },
    };
  }

  return {
    dial: {
      url: '',
      headers: {},
      leaseMs: options.leaseMs,
      reconnectMinMs: options.reconnectMinMs,
      reconnectMaxMs: options.reconnectMaxMs,
      async open(signal) {
        await load();
        // A session to resume goes to the URL READY gave for it; a new one to the Gateway's.
        const base = cursor ? cursor.resumeUrl : await gatewayUrl(signal);
        return `${base.replace(/\/?(\?.*)?$/, '')}/${gatewayQuery}`;
      },
      session,
    },
  };
}
