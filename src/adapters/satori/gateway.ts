import type { DialSession, SessionIo, SocketDial, SocketFrame } from '../../events/connection.js';
import type { AdapterContext } from '../kit/access-token.js';
import { keptCursor } from '../kit/cursor.js';
import type { Login, Logins } from './logins.js';

// The Satori event socket (satori.chat protocol/events; `Opcode` of @satorijs/protocol): we send
// IDENTIFY (op 3) `{token, sn}` within 10 s of connecting, the server answers READY (op 4) with
// its logins, we PING (op 1) every 10 s and it says PONG (op 2); events (op 0) carry `sn`. A
// resume is an IDENTIFY with the `sn` of the last event: the server sends what came after it.
// Koishi closes a socket whose token is wrong with 4004 and one that sent bad JSON with 4000.

export interface SatoriGatewayOptions {
  channel: string;
  /** `ws://…/v1/events`, from the channel's `url`. */
  url: string;
  token: string | undefined;
  leaseMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  context: AdapterContext;
  logins: Logins;
}

/** Where the event stream stands, kept in the store so a restart or another instance resumes it. */
interface Cursor {
  /** The highest `sn` recorded. */
  sn: number;
}

const OP = { event: 0, ping: 1, pong: 2, identify: 3, ready: 4, meta: 5 } as const;
/** The spec's heartbeat: a PING every 10 s. */
const PING_MS = 10_000;
/** No READY this long after IDENTIFY: dial again. */
const READY_TIMEOUT_MS = 10_000;
/** Our own close to dial again and resume. */
const RESUME_CLOSE = 4900;
/** Koishi's close for a wrong token (satorijs/satori packages/server). */
const INVALID_TOKEN = 4004;

/** The `login` of a READY entry: `platform` and `user.id` (or the legacy `self_id`). */
function loginOf(value: unknown): Login | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const {
    platform,
    user,
    self_id: selfId,
  } = value as { platform?: unknown; user?: { id?: unknown }; self_id?: unknown };
  const userId = typeof user?.id === 'string' && user.id ? user.id : typeof selfId === 'string' ? selfId : undefined;
  return typeof platform === 'string' && platform && userId ? { platform, userId } : undefined;
}

/** The event socket of one Satori channel: IDENTIFY with the kept `sn`, READY's logins, PINGs, the cursor. */
export function satoriGateway(options: SatoriGatewayOptions): { dial: SocketDial } {
  const { context, logins } = options;
  let cursor: Cursor | undefined;
  const kept = keptCursor<Cursor>(context, `satori:cursor:${options.channel}`, () => cursor);
  /** Sockets in a row closed with 4004: the first is an error in the log, the rest repeat it quietly. */
  let refusals = 0;

  function session(io: SessionIo): DialSession {
    let pingTimer: unknown;
    let ponged = true;
    let readyTimer: unknown = io.setTimeout(() => io.close(RESUME_CLOSE, 'no READY within 10 s'), READY_TIMEOUT_MS);
    /** No event on this socket yet: its first tells whether the server's count started over. */
    let first = true;
    io.send(
      JSON.stringify({
        op: OP.identify,
        body: { ...(options.token ? { token: options.token } : {}), ...(cursor ? { sn: cursor.sn } : {}) },
      }),
    );

    const ping = (): void => {
      // The previous PING went unanswered for 10 s: a half-open socket.
      if (!ponged) {
        io.close(RESUME_CLOSE, 'no PONG within 10 s');
        return;
      }
      ponged = false;
      io.send(JSON.stringify({ op: OP.ping, body: {} }));
      pingTimer = io.setTimeout(ping, PING_MS);
    };
    const advance = (sn: number): void => {
      if (cursor && sn <= cursor.sn) return;
      cursor = { sn };
      kept.save(io);
    };

    return {
      frame(raw): SocketFrame | undefined {
        const message = JSON.parse(raw.toString('utf8')) as { op?: unknown; body?: Record<string, unknown> | null };
        const body = message.body ?? {};
        switch (message.op) {
          case OP.ready: {
            io.clearTimeout(readyTimer);
            readyTimer = undefined;
            refusals = 0;
            const known = (Array.isArray(body.logins) ? body.logins : []).flatMap((entry) => {
              const login = loginOf(entry);
              return login ? [login] : [];
            });
            logins.replace(known);
            if (pingTimer === undefined) pingTimer = io.setTimeout(ping, PING_MS);
            const botId = known[0]?.userId;
            return { kind: 'meta', heartbeat: false, intervalMs: PING_MS, ...(botId ? { botId } : {}) };
          }
          case OP.pong:
            ponged = true;
            return { kind: 'meta', heartbeat: true };
          case OP.event:
            break;
          default:
            // META (5): proxy URLs, nothing we keep.
            return { kind: 'meta', heartbeat: false };
        }
        const sn = typeof body.sn === 'number' ? body.sn : typeof body.id === 'number' ? body.id : undefined;
        const opening = first;
        first = false;
        if (sn !== undefined && cursor && sn <= cursor.sn) {
          // After IDENTIFY with our sn, a server sends only later events: an earlier first one means its
          // count started over (a restarted server), so the cursor does too; a replayed message is
          // still a duplicate by its id. Any other is recorded already: passed over.
          if (!opening) return { kind: 'meta', heartbeat: false };
          context.logger?.info(
            { channel: options.channel, sn, kept: cursor.sn },
            'the Satori server numbers its events from the start again (restarted?): the cursor follows it',
          );
          cursor = { sn: sn - 1 };
          kept.save(io);
        }
        const recorded = sn === undefined ? undefined : () => advance(sn);
        return { kind: 'envelope', body: raw, ...(recorded ? { recorded } : {}) };
      },

      closed(code) {
        for (const timer of [pingTimer, readyTimer]) io.clearTimeout(timer);
        if (code === INVALID_TOKEN) {
          const log = refusals++ === 0 ? 'error' : 'debug';
          context.logger?.[log](
            { channel: options.channel, code },
            "the Satori server refused our token (close 4004 invalid token): set the channel's token to the server's; dialling again with the backoff",
          );
        }
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
      async open() {
        // The cursor as the store keeps it: another instance may have moved it since.
        cursor = await kept.load((parsed) => typeof parsed.sn === 'number' && Number.isSafeInteger(parsed.sn));
        return options.url;
      },
      session,
    },
  };
}
