import type { Clock } from '../../src/core/clock.js';
import { loadConfig } from '../../src/service/configure.js';
import type { InboundEvent, MediaRef } from '../../src/events/inbound.js';
import type { MediaConnections } from '../../src/media/connections.js';
import { MediaStage } from '../../src/media/index.js';
import { Metrics } from '../../src/metrics/index.js';
import type { BufferedPart } from '../../src/events/inbound.js';
import { silent } from '../support/logger.js';

let partIds = 0;

/** A recorded message of `sender` carrying `media`, as the store hands it to the stage. */
export function partOf(sender: string, media: MediaRef[]): BufferedPart {
  const event: InboundEvent = {
    id: `m${++partIds}`,
    kind: 'message',
    channel: 'generic',
    adapter: 'generic',
    namespace: 'generic',
    conversation: { type: 'private', id: sender },
    sessionKey: `cli:${sender}`,
    sender: { id: sender },
    segments: [],
    text: '',
    media,
    mentions: [],
    timestamp: 0,
    raw: undefined,
  };
  return { id: String(partIds), debounceKey: `generic|cli:${sender}|${sender}`, receivedAt: 0, event };
}

/** A media stage in `dir` with the given media settings (global `concurrency` included). */
export function stageFor(
  dir: string,
  clock: Clock,
  media: Record<string, unknown>,
  connections?: MediaConnections,
): MediaStage {
  const config = loadConfig({ env: {}, file: { media: { dir: 'media', ...media } } });
  return new MediaStage({
    cwd: dir,
    channels: { ids: () => ['generic'], mediaOf: () => config.media, adapterOf: () => undefined },
    concurrency: config.media.concurrency,
    clock,
    logger: silent,
    metrics: new Metrics({ defaultMetrics: false }),
    ...(connections ? { connections } : {}),
  });
}
