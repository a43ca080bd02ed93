import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export const BOT_TOKEN = 'discord-bot-token-test.0123';
export const BOT_USER = '1140000000000000001';

interface Frame {
  op: number;
  d: any;
  s?: number | null;
  t?: string | null;
}

/**
 * The Discord Gateway on 127.0.0.1: Hello on each socket, READY for an Identify with our token
 * (4004 otherwise), a Resume replays every dispatch after its seq then RESUMED, heartbeats are
 * ACKed unless `ack` is off; with `invalidResume` every Resume is answered INVALID_SESSION
 * d=true (resumable). `dispatch` sends a MESSAGE_CREATE on the newest socket.
 */
export async function fakeGateway(options: { heartbeatMs?: number; hello?: boolean } = {}) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  const sockets: WebSocket[] = [];
  const received: Frame[] = [];
  const sent: Frame[] = [];
  const state = {
    ack: true,
    hello: options.hello ?? true,
    sessions: 0,
    paths: [] as string[],
    replayAll: false,
    invalidResume: false,
  };
  let seq = 0;
  const send = (socket: WebSocket, frame: Frame) => socket.send(JSON.stringify(frame));
  wss.on('connection', (socket, request) => {
    sockets.push(socket);
    state.paths.push(request.url ?? '');
    if (state.hello)
      send(socket, { op: 10, d: { heartbeat_interval: options.heartbeatMs ?? 45_000 }, s: null, t: null });
    socket.on('message', (data) => {
      let frame: Frame;
      try {
        frame = JSON.parse(data.toString()) as Frame;
      } catch {
        return;
      }
      received.push(frame);
      if (frame.op === 1 && state.ack) send(socket, { op: 11, d: null });
      if (frame.op === 2) {
        if (frame.d?.token !== BOT_TOKEN) {
          socket.close(4004, 'Authentication failed.');
          return;
        }
        state.sessions++;
        send(socket, {
          op: 0,
          s: ++seq,
          t: 'READY',
          d: {
            v: 10,
            user: { id: BOT_USER, username: 'intake', bot: true },
            session_id: `session-${state.sessions}`,
            resume_gateway_url: `${url}/resume`,
            guilds: [],
          },
        });
      }
      if (frame.op === 6) {
        if (state.invalidResume) {
          send(socket, { op: 9, d: true });
          return;
        }
        if (frame.d?.session_id !== `session-${state.sessions}`) {
          send(socket, { op: 9, d: false });
          return;
        }
        for (const old of sent.filter((f) => state.replayAll || (f.s ?? 0) > (frame.d.seq ?? 0))) send(socket, old);
        send(socket, { op: 0, s: ++seq, t: 'RESUMED', d: {} });
      }
    });
  });
  const live = () => sockets.filter((socket) => socket.readyState === socket.OPEN);
  return {
    url,
    state,
    received,
    sockets,
    identifies: () => received.filter((f) => f.op === 2).length,
    resumes: () => received.filter((f) => f.op === 6),
    /** Send a MESSAGE_CREATE with this message (merged into defaults) on the newest socket. */
    dispatch(d: Record<string, unknown>) {
      const frame: Frame = {
        op: 0,
        s: ++seq,
        t: 'MESSAGE_CREATE',
        d: {
          channel_id: '1170000000000000001',
          guild_id: '1160000000000000001',
          author: { id: '1150000000000000001', username: 'ana' },
          content: '',
          timestamp: new Date().toISOString(),
          mentions: [],
          attachments: [],
          embeds: [],
          ...d,
        },
      };
      sent.push(frame);
      const socket = live().at(-1);
      if (socket) send(socket, frame);
    },
    raw(text: string) {
      live().at(-1)?.send(text);
    },
    op(frame: Frame) {
      const socket = live().at(-1);
      if (socket) send(socket, frame);
    },
    closeNewest(code: number, reason = '') {
      live().at(-1)?.close(code, reason);
    },
    open: () => live().length,
    async close() {
      for (const socket of sockets) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
