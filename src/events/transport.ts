import type { IncomingHttpHeaders } from 'node:http';

/** What a transport hands the pipeline, and what it answers: the edge of the event model. */

/** One HTTP delivery exactly as received: verification runs over these bytes. */
export interface RawDelivery {
  headers: IncomingHttpHeaders;
  body: Buffer;
  query: URLSearchParams;
  /** Receive time, milliseconds. */
  now: number;
  /**
   * The rest of the URL after `/webhooks/<id>` (`/_matrix/app/v1/transactions/42`), for a
   * platform that sends to paths under the webhook URL; undefined on the webhook URL itself.
   */
  path?: string;
  /**
   * Set by a socket transport for a frame on a connection its adapter authenticated at the
   * upgrade (frames carry no signature of their own). Never set from anything a request says.
   */
  authenticated?: boolean;
  /**
   * Set by a socket transport: the bot account its connection is known to be (named at the
   * upgrade, by the bot's login answer, or by its first meta event), for an adapter that holds a
   * frame's own claim of its bot to it. Never set from the frame it comes with.
   */
  bot?: string;
}

/**
 * A delivery of a run that keeps its order (the frames of one socket read, the updates of one
 * polled page): the transport starts each once the one before reached admission, so their steps
 * before admission run in arrival order and their admissions go to the store together.
 */
export interface InOrder {
  /** Called once the delivery's admission is queued, or it ended without one: the next may start. */
  reached(): void;
  /**
   * Resolves once the deliveries before it in the run are settled: awaited by a step that reads
   * what their admission writes (a recall or edit looking for its message, a typing hold).
   */
  earlier(): Promise<unknown>;
}

/** What a platform expects back, when it is not the standard ingest answer. */
export interface PlatformReply {
  status: number;
  body?: unknown;
  contentType?: string;
  /** Headers of the answer besides its type (`X-Content-Type-Options` on an echo). */
  headers?: Readonly<Record<string, string>>;
}
