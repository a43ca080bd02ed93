import type { OutputOf, OutputType } from '../events/output.js';
import { Connection, type ConnectionOptions } from './connection.js';
import { ClientError, errorOf, isClientError, isTransient } from './errors.js';
import { sseFrames } from './sse.js';

/** What `events()` takes besides where the service is. */
export interface EventsOptions extends ConnectionOptions {
  /** Resume after this event (its `id`, `<seq>@<life>`, as a stream sent it). @default none: live events only */
  lastEventId?: string;
  /** A connection silent this long is taken as dropped and resumed (the service sends a comment every 15 s). @default 45000 */
  idleMs?: number;
}

/** An output as the stream carries it: its event id, its type, the output event. */
export type OutputEvent = { [T in OutputType]: { id: string; type: T; data: OutputOf<T> } }[OutputType];

/**
 * Records between `after` and `next` will not come: they were trimmed before this client read
 * them (docs/output.md#consuming-it). With `reset`, `after` was a seq of an earlier life of the
 * store's seqs (the store lost data): seqs from `next` on name other records than before.
 */
export interface GapEvent {
  type: 'gap';
  after: number;
  next: number;
  reset: boolean;
}

export type StreamEvent = OutputEvent | GapEvent;

/** The event stream as an async iterator, and where it stands. */
export interface EventStream extends AsyncGenerator<StreamEvent, void, undefined> {
  /** The id of the last event received: what a later `events({lastEventId})` resumes after. */
  readonly lastEventId: string | undefined;
}

/**
 * `GET <url>/v1/events` as an async iterator of outputs and gaps. A connection that drops (or
 * goes silent past `idleMs`) is opened again with `Last-Event-ID`, after a jittered backoff: the
 * outputs after the last one received follow, with none missed or repeated; records trimmed
 * meanwhile are told as a `gap`. No answer, a 5xx or a 429 is retried; a 4xx throws a
 * ClientError (`bad_token`, `bad_resume_point`, `resume_point_ahead`). `break` or an aborted
 * `signal` ends it.
 */
export function events(options: EventsOptions): EventStream {
  const idleMs = options.idleMs ?? 45_000;
  if (!Number.isInteger(idleMs) || idleMs < 1)
    throw new RangeError(`idleMs must be a whole number of ms above 0 (got ${idleMs})`);
  const at = { lastEventId: options.lastEventId };
  const stream = read(new Connection(options), at, idleMs, options.signal);
  return Object.defineProperty(stream, 'lastEventId', { get: () => at.lastEventId, enumerable: true }) as EventStream;
}

async function* read(
  connection: Connection,
  at: { lastEventId: string | undefined },
  idleMs: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<StreamEvent, void, undefined> {
  let failures = 0;
  while (!signal?.aborted) {
    // This connection's own end: the caller's signal, a silence past idleMs, or the loop leaving.
    const connected = new AbortController();
    const end = (): void => connected.abort();
    signal?.addEventListener('abort', end, { once: true });
    let idle: unknown;
    const watch = (): void => {
      connection.clock.clearTimeout(idle);
      idle = connection.clock.setTimeout(end, idleMs);
    };
    let retryAfter: string | null = null;
    try {
      watch();
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (at.lastEventId !== undefined) headers['last-event-id'] = at.lastEventId;
      const response = await connection.request('GET', 'v1/events', { headers, signal: connected.signal });
      if (response.status === 200 && response.body) {
        for await (const frame of sseFrames(response.body, watch)) {
          const item = eventOf(frame.id ?? '', frame.event, frame.data);
          // (A gap has no id of its own: the stream's last id stands.)
          if (frame.id !== undefined) at.lastEventId = frame.id;
          failures = 0;
          yield item;
        }
      } else if (isTransient(response.status)) {
        retryAfter = response.headers.get('retry-after');
        await response.body?.cancel();
      } else {
        throw await errorOf(response, 'GET /v1/events');
      }
    } catch (error) {
      if (signal?.aborted) return;
      // A 4xx or an event that is not the service's JSON throws; a dropped or silent connection resumes.
      if (isClientError(error) && error.status !== 0) throw error;
    } finally {
      connection.clock.clearTimeout(idle);
      signal?.removeEventListener('abort', end);
      connected.abort();
    }
    await connection.pause(failures++, retryAfter, signal);
  }
}

/** A frame as the item the iterator yields: a gap, or an output with its event id. */
function eventOf(id: string, type: string, data: string): StreamEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new ClientError(
      200,
      'bad_answer',
      `GET /v1/events sent a "${type}" event whose data is not JSON: ${data.slice(0, 200)}`,
    );
  }
  if (type === 'gap') {
    const gap = parsed as { after: number; next: number; reset?: boolean };
    return { type: 'gap', after: gap.after, next: gap.next, reset: gap.reset === true };
  }
  return { id, type, data: parsed } as unknown as OutputEvent;
}
