import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { errorResponder } from '../../src/http/errors.js';
import { silent } from './logger.js';

/** One event of a stream: its id, its name (`message` unless the frame named one) and its JSON data. */
export interface SseFrame {
  id: string;
  event: string;
  data: any;
}

/**
 * The frames of an event stream's body as they arrive: blocks end at a blank line, fields are
 * `name: value` lines, and a block without `data` (a comment, a bare retry) is no event
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 */
export async function* framesOf(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = new Map<string, string>();
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
      }
      if (fields.has('data'))
        yield {
          id: fields.get('id') ?? '',
          event: fields.get('event') ?? 'message',
          data: JSON.parse(fields.get('data') as string),
        };
    }
  }
}

/** Read an SSE stream until `count` frames arrived (or the timeout), then close it. */
export async function readEvents(
  url: string,
  count: number,
  options: { headers?: Record<string, string>; timeoutMs?: number; onOpen?: () => unknown } = {},
): Promise<SseFrame[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 5000);
  const frames: SseFrame[] = [];
  try {
    const response = await fetch(url, { headers: options.headers ?? {}, signal: controller.signal });
    if (response.status !== 200) throw new Error(`event stream answered ${response.status}: ${await response.text()}`);
    await options.onOpen?.();
    for await (const frame of framesOf(response.body as unknown as AsyncIterable<Uint8Array>)) {
      frames.push(frame);
      if (frames.length >= count) return frames;
    }
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return frames;
}

/** An event stream read frame by frame as it comes, and whether the service ended it. */
export interface Followed {
  status: Promise<number>;
  frames: SseFrame[];
  /** Resolves when the response ended (the service closed the stream). */
  ended: Promise<void>;
  isEnded(): boolean;
  close(): void;
}

/** Open `url` as an event stream and keep every frame in `frames` until it ends or `close()`. */
export function follow(url: string, headers: Record<string, string> = {}): Followed {
  const controller = new AbortController();
  const frames: SseFrame[] = [];
  let done = false;
  let status!: (code: number) => void;
  const statusP = new Promise<number>((resolve) => (status = resolve));
  const ended = (async () => {
    try {
      const response = await fetch(url, { headers, signal: controller.signal });
      status(response.status);
      for await (const frame of framesOf(response.body as unknown as AsyncIterable<Uint8Array>)) frames.push(frame);
    } catch {
      status(0);
    } finally {
      done = true;
    }
  })();
  return { status: statusP, frames, ended, isEnded: () => done, close: () => controller.abort() };
}

/** A served event stream: its URL (ending in `/`), port and server, and how to close it. */
export interface ServedStream {
  url: string;
  port: number;
  server: Server;
  close(): void;
}

/** Serve `stream` (a StreamHub's events or activity stream) behind the error responder, as the app does, on a loopback port. */
export async function serveStream(stream: Koa.Middleware): Promise<ServedStream> {
  const app = new Koa();
  app.silent = true; // a client cut off, or hanging up after its frames, is expected here
  app.use(errorResponder(silent));
  app.use(stream);
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    server,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
