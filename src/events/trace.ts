import type { DeliveryState } from './output.js';
import type { Party } from './inbound.js';

/** What happened to one delivered event, or to one batch: the verdict trail (`/v1/trace`, `/v1/activity`). */
export type Verdict = 'accepted' | 'duplicate' | 'fuzzy_duplicate' | 'correlated' | 'ignored' | 'looped' | 'rejected';

export interface TraceEntry {
  /** Local sequence of the trail (resume point of `/v1/activity`). */
  n: number;
  at: number;
  channel: string;
  kind: 'verdict' | 'batch' | 'delivery' | 'turn';
  /** verdict: the event's ingest-answer id; batch and delivery: the output id; turn: the turn's (held, done) or the release's output id. */
  id: string;
  platformId?: string;
  sessionKey?: string;
  sender?: Party;
  /** First characters of the text, for a feed. */
  preview?: string;
  verdict?: Verdict;
  /** Why: the duplicated id, the correlated bot, the error code and message. */
  reason?: string;
  /** batch: the ids merged into `id`, and its seq; a correlated verdict: the platform id of the delivery it joined. */
  messageIds?: string[];
  seq?: number;
  /** delivery: state after an attempt, with attempts and the last error. */
  state?: DeliveryState;
  attempts?: number;
  lastError?: string;
}
