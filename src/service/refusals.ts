import type { Logger } from 'pino';
import type { Channels } from './channels.js';
import type { Clock } from '../core/clock.js';
import { isIntakeError } from '../core/errors.js';
import type { TraceEntry } from '../events/trace.js';
import type { Metrics } from '../metrics/index.js';

export interface RefusalsOptions {
  channels: Channels;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The verdict trail (`/v1/trace`, `/v1/activity`). */
  record(entry: Omit<TraceEntry, 'n'>): void;
}

/**
 * What a refused delivery leaves: a count, a verdict in the trail and a warning. The pipeline's
 * `inbound` refuses from its steps; the HTTP surface refuses before it (body limit, content type).
 */
export function refusals({ channels, clock, logger, metrics, record }: RefusalsOptions) {
  /** A refused delivery: counted and trailed (a client that left was refused nothing). */
  return function rejected(channelId: string, error: unknown): void {
    const channel = channels.get(channelId);
    if (!channel) return;
    const code = isIntakeError(error) ? error.code : 'internal';
    if (code === 'client_closed') return;
    metrics.message(channelId, channel.adapter.name, 'rejected');
    record({
      at: clock.now(),
      channel: channelId,
      kind: 'verdict',
      id: '',
      verdict: 'rejected',
      reason: `${code}: ${(error as Error).message}`,
    });
    logger.warn({ channel: channelId, code, reason: (error as Error).message }, 'delivery rejected');
  };
}
