import type { DialSession, SessionIo, SocketDial, SocketFrame } from '../../events/connection.js';
import type { AdapterContext } from '../kit/access-token.js';
import { keptCursor } from '../kit/cursor.js';
import { platformJson } from '../kit/platform-api.js';

// The KOOK WebSocket gateway (developer.kookapp.cn/doc/websocket; kaiheila/api-docs
// docs/zh-cn/websocket.md): `GET /api/v3/gateway/index?compress=0` gives the socket URL; the
// server says HELLO (s 1) within 6 s, with a session id; we PING (s 2) with the last `sn`
// processed every 30 s ± 5 and want a PONG (s 3) within 6 s; events (s 0) carry `sn`. After a
// drop we reconnect to the old URL with `resume=1&sn=<last>&sessionId=<id>`, and the server
// replays what we missed, then says RESUME ACK (s 6). RECONNECT (s 5): clear `sn` and the
// session, and fetch the gateway anew.

export interface KookGatewayOptions {
  channel: string;
  botToken: string;
  apiBaseUrl: string;
  leaseMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  context: AdapterContext;
  /** Our bot's user id, when known: `/v1/connections` names the connection by it. */
  botId(): string | undefined;
  /** Settles once the bot id is asked of the API (`/api/v3/user/me`), whatever the answer. */
  learned: Promise<unknown>;
}

/** Where a session stands, kept in the store so a restart or another instance resumes it. */
interface Cursor {
  sessionId: string;
  /** The highest `sn` recorded. */
  sn: number;
  /** The socket URL the session was opened on. */
  url: string;
}

/** HELLO codes after which a retry cannot help: the token must change. */
const FATAL = new Map<number, string>([
  [40100, 'KOOK says the gateway connection lacks a parameter (HELLO 40100)'],
  [40101, 'KOOK refused the botToken (HELLO 40101 invalid token)'],
  [40102, 'KOOK refused the botToken (HELLO 40102 token check failed)'],
]);
/** Our own close to reconnect and resume. */
const RESUME_CLOSE = 4900;
/** No HELLO this long after the socket opened: a timeout (the docs' 6 s). */
const HELLO_TIMEOUT_MS = 6000;
/** PING every 30 s ± 5 s; no PONG within 6 s: a timeout. */
const PING_MS = 30_000;
const PING_JITTER_MS = 5000;
const PONG_TIMEOUT_MS = 6000;
/** Resumes tried in a row before a new session (the docs: two, after 8 and 16 s). */
const MAX_RESUMES = 2;

/** The gateway of one KOOK channel: the socket URL to dial, and the session of each socket. */
export function kookGateway(options: KookGatewayOptions): { dial: SocketDial } {
  const { botToken, context } = options;
  const cursorKey = `kook:cursor:${options.channel}`;
  let cursor: Cursor | undefined;
  /** The socket URL (without resume parameters) of the connection being dialled. */
  let base = '';
  /** Resumes dialled since the last HELLO: after two, the gateway is fetched anew (the docs' flow). */
  let resumes = 0;

  const kept = keptCursor<Cursor>(context, cursorKey, () => cursor);
  const save = (io: SessionIo) => kept.save(io);
  async function load(): Promise<void> {
    cursor = await kept.load(
      (parsed) =>
        typeof parsed.sessionId === 'string' && typeof parsed.sn === 'number' && typeof parsed.url === 'string',
    );
  }

  async function gatewayUrl(signal: AbortSignal): Promise<string> {
    const answer = (await platformJson(
      `${options.apiBaseUrl}/api/v3/gateway/index?compress=0`,
      { authorization: `Bot ${botToken}` },
      signal,
    ).catch((error: unknown) => {
      throw new Error(`GET /api/v3/gateway/index failed: ${(error as Error).message.replaceAll(botToken, '<token>')}`);
    })) as { code?: unknown; message?: unknown; data?: { url?: unknown } } | undefined;
    if (answer?.code !== 0 || typeof answer.data?.url !== 'string')
      throw new Error(`GET /api/v3/gateway/index answered code ${String(answer?.code)}: ${String(answer?.message)}`);
    return answer.data.url;
  }

  function session(io: SessionIo): DialSession {
    let fatal: string | undefined;
    let pingTimer: unknown;
    let pongTimer: unknown;
    let helloTimer: unknown = io.setTimeout(
      () => io.close(RESUME_CLOSE, 'no HELLO from the gateway'),
      HELLO_TIMEOUT_MS,
    );
    const clear = (): void => {
      for (const timer of [pingTimer, pongTimer, helloTimer]) io.clearTimeout(timer);
    };
    const ping = (): void => {
      io.send(JSON.stringify({ s: 2, sn: cursor?.sn ?? 0 }));
      pongTimer = io.setTimeout(() => io.close(RESUME_CLOSE, 'no PONG within 6 s'), PONG_TIMEOUT_MS);
      pingTimer = io.setTimeout(ping, PING_MS - PING_JITTER_MS + 2 * PING_JITTER_MS * io.random());
    };
    const advance = (sn: number | undefined): void => {
      if (sn === undefined || !cursor || sn <= cursor.sn) return;
      cursor.sn = sn;
      save(io);
    };
    const forget = (): void => {
      cursor = undefined;
      save(io);
    };

    return {
      frame(raw): SocketFrame | undefined {
        const message = JSON.parse(raw.toString('utf8')) as { s?: unknown; d?: unknown; sn?: unknown };
        const d = message.d as Record<string, unknown> | null | undefined;
        switch (message.s) {
          case 1: {
            io.clearTimeout(helloTimer);
            helloTimer = undefined;
            const code = Number(d?.code);
            if (code !== 0) {
              fatal = FATAL.get(code);
              // 40103 (token expired) and anything else: a new session on a fresh gateway URL.
              if (!fatal) forget();
              io.close(RESUME_CLOSE, `HELLO ${code}`);
              return { kind: 'meta', heartbeat: false };
            }
            const sessionId = typeof d?.session_id === 'string' ? d.session_id : undefined;
            // A resumed session keeps its cursor; a new one starts from 0 on this socket's URL.
            if (sessionId && cursor?.sessionId !== sessionId) {
              cursor = { sessionId, sn: 0, url: base };
              save(io);
            }
            resumes = 0;
            pingTimer = io.setTimeout(ping, PING_MS - PING_JITTER_MS + 2 * PING_JITTER_MS * io.random());
            const botId = options.botId();
            return { kind: 'meta', heartbeat: false, intervalMs: PING_MS, ...(botId ? { botId } : {}) };
          }
          case 3:
            io.clearTimeout(pongTimer);
            pongTimer = undefined;
            return { kind: 'meta', heartbeat: true };
          case 5:
            // The session is gone (40106-40108): clear the sn and fetch the gateway again.
            forget();
            io.close(RESUME_CLOSE, `RECONNECT ${String(d?.code)}`);
            return { kind: 'meta', heartbeat: false };
          case 0:
            break;
          default:
            // RESUME ACK (6): the backlog is through.
            return { kind: 'meta', heartbeat: false };
        }
        const sn = typeof message.sn === 'number' ? message.sn : undefined;
        // An event is recorded before the cursor moves past it; a replayed one is a duplicate by msg_id.
        return { kind: 'envelope', body: raw, recorded: () => advance(sn) };
      },

      closed() {
        clear();
        if (fatal) return { next: 'stop', why: `${fatal}: check the channel's botToken` };
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
        await Promise.all([load(), options.learned]);
        if (cursor && resumes >= MAX_RESUMES) {
          cursor = undefined;
          resumes = 0;
        }
        if (!cursor) {
          base = await gatewayUrl(signal);
          return base;
        }
        resumes++;
        base = cursor.url;
        // Resume: the old URL, the last sn recorded and the session id (the docs' `sessionId`).
        const resume = new URLSearchParams({ resume: '1', sn: String(cursor.sn), sessionId: cursor.sessionId });
        return `${cursor.url}${cursor.url.includes('?') ? '&' : '?'}${resume.toString()}`;
      },
      session,
    },
  };
}
