import { rename, unlink, utimes } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { nanoid } from 'nanoid';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { MediaOptions } from '../config/schema.js';
import type { BufferedPart, MediaFailure, MediaItem, MediaRef, PartMedia, ResolvedMedia } from '../events/inbound.js';
import type { MediaResult, Metrics } from '../metrics/index.js';
import { deadline, untilAborted } from './deadline.js';
import { mediaConnections, type MediaConnections } from './connections.js';
import { MediaError, type FailureKind } from '../core/errors.js';
import { fetchToFile } from './fetch.js';
import { diskFailure, ensureFolder, sessionFolder, sweepStale, sweepTemporaries, writeProblem } from './sandbox.js';
import { Slots } from './slots.js';
import { storedType } from './type.js';

export interface MediaStageOptions {
  cwd: string;
  /** The configured channels: their ids (their media folders are swept), settings and resolvers. */
  channels: MediaChannels;
  /** Global cap on downloads running at once (connections open). */
  concurrency: number;
  /** Deadlines, retry waits, Retry-After dates, the sweeper's notion of "unused". */
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** Where download connections come from (the address guard lives there). @default made by the stage, closed by `close()` */
  connections?: MediaConnections;
  /**
   * How long a finished download waits for its batch's flush to collect it. The flush may run on
   * another instance and never ask here; past this the result is forgotten (a flush that asks
   * later downloads again). @default 5 minutes
   */
  keepSettledMs?: number;
}

/** What the stage reads of the configured channels. */
export interface MediaChannels {
  ids(): string[];
  /** Media options of a channel (global values overridden by the channel's). */
  mediaOf(channel: string): MediaOptions;
  /** The adapter of a channel, for platform media resolvers (exchange a platform media id for a URL). */
  adapterOf(channel: string): { resolveMedia?(ref: MediaRef, signal: AbortSignal): Promise<ResolvedMedia> } | undefined;
}

/** How long a finished download waits for its flush unless told otherwise. */
export const KEEP_SETTLED_MS = 5 * 60_000;

const resultOf: Record<FailureKind, MediaResult> = {
  blocked: 'blocked',
  too_large: 'too_large',
  timeout: 'timeout',
  http: 'failed',
  network: 'failed',
  bad_url: 'blocked',
  aborted: 'failed',
  disk: 'disk',
};

/** Reason prefix of an attachment the stage gave up on because it was closing. */
const ABORTED = 'aborted:';

/**
 * Attachment download, started as soon as a message is recorded so it overlaps the debounce
 * window; a flush waits for its batch's downloads. Each attachment has one deadline
 * (`media.timeoutMs`) from the moment it is begun: queue time, retries and waits included. At
 * most `media.concurrency` connections are open at once and at most
 * `media.perSenderConcurrency` for one sender (debounce key); waiting senders take turns. A
 * failed download never drops the message: it becomes a `mediaErrors` entry. A download cut
 * short by `close()` is not a failure: its batch's `collect` rejects, so the batch stays in
 * the store and downloads again at the next start.
 */
export class MediaStage {
  private readonly pending = new Map<string, Promise<PartMedia>>();
  private readonly slots: Slots;
  private readonly connections: MediaConnections;
  private sweepTimer: unknown;
  private readonly stop = new AbortController();

  constructor(private readonly options: MediaStageOptions) {
    this.slots = new Slots(options.concurrency);
    this.connections = options.connections ?? mediaConnections();
  }

  /** Remove temporaries of a previous run, warn of a media folder that cannot take downloads, and start the sweeper. */
  async start(): Promise<void> {
    const dirs = this.dirs();
    for (const [dir, options] of dirs) {
      const removed = await sweepTemporaries(dir);
      if (removed) this.options.logger.info({ dir, removed }, 'removed unfinished media downloads');
      // A warning, not a refusal: messages still flow, their attachments become `disk:` errors.
      const problem = await writeProblem(dir, options.maxBytes);
      if (problem)
        this.options.logger.warn(
          { dir, problem },
          `media folder "${dir}" (media.dir) cannot take downloads: ${problem}; attachments will fail with "disk:" errors until it can`,
        );
    }
    if (dirs.size === 0) return;
    const interval = Math.min(...[...dirs.values()].map((o) => o.sweepIntervalMs));
    this.sweepTimer = this.options.clock.setInterval(() => void this.sweep(), interval);
  }

  /** Every media folder in use, with the options that govern it. */
  private dirs(): Map<string, MediaOptions> {
    const dirs = new Map<string, MediaOptions>();
    for (const channel of this.options.channels.ids()) {
      const options = this.options.channels.mediaOf(channel);
      dirs.set(resolve(this.options.cwd, options.dir), options);
    }
    return dirs;
  }

  /** Delete files unused for `ttlMs` and empty session folders. */
  async sweep(): Promise<{ files: number; folders: number }> {
    const total = { files: 0, folders: 0 };
    for (const [dir, options] of this.dirs()) {
      const swept = await sweepStale(dir, options.ttlMs, this.options.clock.now());
      total.files += swept.files;
      total.folders += swept.folders;
    }
    if (total.files) this.options.logger.info(total, 'media sweeper removed stale files');
    return total;
  }

  /** Downloads begun and not yet collected (finished ones are kept a while for their flush). */
  get tracked(): number {
    return this.pending.size;
  }

  /** Begin downloading a recorded part's attachments. */
  begin(part: BufferedPart): void {
    if (this.stop.signal.aborted || part.event.media.length === 0 || this.pending.has(part.id)) return;
    const download = this.fetchPart(part);
    this.pending.set(part.id, download);
    const forget = () => {
      this.options.clock.setTimeout(() => {
        if (this.pending.get(part.id) === download) this.pending.delete(part.id);
      }, this.options.keepSettledMs ?? KEEP_SETTLED_MS);
    };
    download.then(forget, forget);
  }

  /**
   * Wait for the downloads of a batch (starting any not yet begun, e.g. after a restart).
   * Rejects when the stage closed before the batch's downloads finished: the flush fails and
   * the batch stays in the store.
   */
  async collect(parts: readonly BufferedPart[]): Promise<PartMedia[]> {
    if (parts.every((part) => part.event.media.length === 0)) return parts.map(() => ({ media: [], errors: [] }));
    for (const part of parts) this.begin(part);
    const results = await Promise.all(
      parts.map((part) => this.pending.get(part.id) ?? Promise.resolve(this.closedResult(part))),
    );
    for (const part of parts) this.pending.delete(part.id);
    if (results.some((result) => result.errors.some((error) => error.reason.startsWith(ABORTED)))) {
      throw new MediaError(
        'aborted',
        "media stage closed before the batch's downloads finished; the batch stays in the store",
        false,
        undefined,
        { stage: 'media' },
      );
    }
    await this.touch(results.flatMap((r) => r.media));
    return results;
  }

  /**
   * Keep a batch's collected downloads for its next flush (a batch held for an agent's turn is
   * built again when released): what a platform serves once, or for minutes, is not fetched twice.
   */
  keep(parts: readonly BufferedPart[], results: readonly PartMedia[]): void {
    parts.forEach((part, i) => {
      const result = results[i];
      if (!result || part.event.media.length === 0 || this.pending.has(part.id)) return;
      const kept = Promise.resolve(result);
      this.pending.set(part.id, kept);
      this.options.clock.setTimeout(() => {
        if (this.pending.get(part.id) === kept) this.pending.delete(part.id);
      }, this.options.keepSettledMs ?? KEEP_SETTLED_MS);
    });
  }

  /**
   * Delete the downloads of parts that will never be emitted (recalled while they waited,
   * contract §13): each download is a file of its own, so no other output loses one.
   */
  async discard(parts: readonly BufferedPart[]): Promise<number> {
    let deleted = 0;
    for (const part of parts) {
      const download = this.pending.get(part.id);
      if (!download) continue;
      this.pending.delete(part.id);
      const { media } = await download.catch(() => ({ media: [] as MediaItem[] }));
      for (const item of media) {
        await unlink(resolve(this.options.cwd, item.path)).then(
          () => (deleted += 1),
          () => undefined,
        );
      }
    }
    return deleted;
  }

  /** Mark files as used now (the sweeper keeps what was used within `ttlMs`). */
  async touch(items: readonly MediaItem[]): Promise<void> {
    const now = new Date(this.options.clock.now());
    await Promise.all(
      items.map((item) => utimes(resolve(this.options.cwd, item.path), now, now).catch(() => undefined)),
    );
  }

  /**
   * Stop: abort every download (queued, waiting to retry or streaming) and wait for them to
   * settle, which the abort makes prompt; temporaries are removed, never renamed into place.
   */
  async close(): Promise<void> {
    this.options.clock.clearInterval(this.sweepTimer);
    if (!this.stop.signal.aborted) this.stop.abort(new MediaError('aborted', 'media stage closed', false));
    await Promise.allSettled([...this.pending.values()]);
    await this.connections.close();
  }

  /** A part with media that can no longer be downloaded (the stage is closed). */
  private closedResult(part: BufferedPart): PartMedia {
    return {
      media: [],
      errors: part.event.media.map((ref) => ({
        url: labelOf(part.event.channel, ref),
        reason: `${ABORTED} media stage closed`,
      })),
    };
  }

  private async fetchPart(part: BufferedPart): Promise<PartMedia> {
    const { channel } = part.event;
    const options = this.options.channels.mediaOf(channel);
    const refs = part.event.media;
    const result: PartMedia = { media: [], errors: [] };
    const outcomes = await Promise.all(
      refs.slice(0, options.maxPerMessage).map((ref) => this.downloadOne(part, ref, options)),
    );
    for (const outcome of outcomes) {
      if ('reason' in outcome) result.errors.push(outcome);
      else result.media.push(outcome);
    }
    for (const ref of refs.slice(options.maxPerMessage)) {
      result.errors.push({
        url: labelOf(channel, ref),
        reason: `too many attachments: more than media.maxPerMessage (${options.maxPerMessage})`,
      });
    }
    return result;
  }

  private async downloadOne(
    part: BufferedPart,
    ref: MediaRef,
    options: MediaOptions,
  ): Promise<MediaItem | MediaFailure> {
    const { channel, sessionKey } = part.event;
    const { clock, concurrency } = this.options;
    const label = labelOf(channel, ref);
    // One deadline for the attachment, from now: resolving, queueing, every attempt and wait.
    const budget = deadline(
      clock,
      options.timeoutMs,
      () =>
        new MediaError(
          'timeout',
          `no complete download within media.timeoutMs (${options.timeoutMs} ms), queue time included`,
          false,
        ),
    );
    const signal = AbortSignal.any([budget.signal, this.stop.signal]);
    let staged: string | undefined;
    try {
      if (ref.size !== undefined && ref.size > options.maxBytes) {
        throw new MediaError(
          'too_large',
          `declared ${ref.size} bytes, over media.maxBytes (${options.maxBytes})`,
          false,
        );
      }
      const source = await this.resolveSource(channel, ref, options, signal);
      const folder = await ensureFolder(resolve(this.options.cwd, options.dir), sessionFolder(sessionKey)).catch(
        (error: unknown) => {
          throw diskFailure(error, 'create the session folder');
        },
      );
      const id = nanoid();
      staged = join(folder, id);
      const perSender = options.perSenderConcurrency ?? Math.max(1, Math.floor(concurrency / 2));
      const fetched = await fetchToFile(source.url, staged, {
        maxBytes: options.maxBytes,
        timeoutMs: Math.max(1, budget.remaining()),
        retries: options.retries,
        allowHosts: options.allowHosts,
        allowPorts: options.allowPorts,
        signal,
        clock,
        connections: this.connections,
        acquire: (wait) => this.slots.acquire(part.debounceKey, perSender, wait),
        ...(source.headers ? { headers: source.headers } : {}),
      });
      const stored = await storedType(fetched.head, ref.mimeType ?? source.mimeType ?? fetched.declaredType);
      const final = join(folder, `${id}.${stored.extension}`);
      await rename(staged, final).catch((error: unknown) => {
        throw diskFailure(error, 'name the download');
      });
      staged = undefined;
      this.options.metrics.media(channel, 'ok', fetched.bytes);
      this.options.logger.debug({ channel, path: final, bytes: fetched.bytes }, 'media stored');
      return {
        type: stored.type,
        path: this.display(final),
        mime: stored.mime,
        bytes: fetched.bytes,
        sha256: fetched.sha256,
      };
    } catch (error) {
      if (staged) await unlink(staged).catch(() => undefined);
      const kind: FailureKind = error instanceof MediaError ? error.kind : 'network';
      const reason = `${kind}: ${(error as Error).message}`;
      if (kind === 'aborted') {
        this.options.logger.info(
          { channel, media: label },
          'media download aborted by shutdown; the batch stays in the store',
        );
      } else {
        this.options.metrics.media(channel, resultOf[kind], 0);
        this.options.logger.warn({ channel, media: label, reason }, 'media download refused or failed');
      }
      return { url: label, reason };
    } finally {
      budget.clear();
    }
  }

  private async resolveSource(
    channel: string,
    ref: MediaRef,
    options: MediaOptions,
    signal: AbortSignal,
  ): Promise<{ url: string; headers?: Record<string, string>; mimeType?: string }> {
    if (ref.url) return { url: ref.url };
    const resolver = this.options.channels.adapterOf(channel)?.resolveMedia;
    if (!ref.ref || !resolver)
      throw new MediaError('bad_url', 'attachment has neither a URL nor a resolvable reference', false);
    // A resolver that ignores its signal still cannot outlive the deadline or hold up close().
    const resolved = await untilAborted(resolver(ref, signal), signal).catch((error: unknown) => {
      if (signal.aborted && signal.reason instanceof MediaError) throw signal.reason;
      if (error instanceof MediaError) throw error;
      throw new MediaError('http', `could not resolve the platform media id: ${(error as Error).message}`, false);
    });
    if (resolved.size !== undefined && resolved.size > options.maxBytes) {
      throw new MediaError(
        'too_large',
        `platform reports ${resolved.size} bytes, over media.maxBytes (${options.maxBytes})`,
        false,
      );
    }
    return resolved;
  }

  /** Path for the output: relative to the working directory when inside it. */
  private display(path: string): string {
    const rel = relative(this.options.cwd, path);
    return rel.startsWith('..') || isAbsolute(rel) ? path : rel;
  }
}

/** How an attachment is named in errors and logs: its URL, or `<adapter>:<ref>`; never a resolved (token-bearing) URL. */
function labelOf(channel: string, ref: MediaRef): string {
  return ref.url ?? `${channel}:${ref.ref ?? 'unknown'}`;
}
