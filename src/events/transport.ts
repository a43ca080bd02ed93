import type { IncomingHttpHeaders } from 'node:http';

/** What a transport hands the pipeline, and what it answers: the edge of the event model. */

/** One HTTP delivery exactly as received: verification runs over these bytes. */
export interface RawDelivery {
  headers: IncomingHttpHeaders;
  body: Buffer;
  query: URLSearchParams;
  /** Receive time, milliseconds. */
  now: number;
}

/** What a platform expects back, when it is not the standard ingest answer. */
export interface PlatformReply {
  status: number;
  body?: unknown;
  contentType?: string;
}
