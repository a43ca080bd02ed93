import { rename, utimes } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import mime from 'mime';
import { nanoid } from 'nanoid';
import type { Logger } from 'pino';
import type { Adapter } from '../adapters/types.js';
import type { Clock } from '../clock.js';
import type { MediaOptions } from '../config/schema.js';
import type { PartMedia } from '../emit/build.js';
import type { MediaFailure, MediaItem } from '../emit/output.js';
import { mediaTypeOf, type MediaRef } from '../events.js';
import type { MediaResult, Metrics } from '../metrics/index.js';
import type { BufferedPart } from '../store/types.js';
import { MediaError, type FailureKind } from './errors.js';
import { fetchToFile } from './fetch.js';
import { ensureFolder, sessionFolder, sweepStale, sweepTemporaries } from './sandbox.js';

export interface MediaStageOptions {
  cwd: string;
  /** Configured channel ids (their media folders are swept). */
  channels: readonly string[];
  /** Global cap on downloads running at once. */
  concurrency: number;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** Media options of a channel (global values overridden by the channel's). */
  optionsFor(channel: string): MediaOptions;
  /** The adapter of a channel, for platform media resolvers. */
  adapterFor(channel: string): Adapter | undefined;
}

const resultOf: Record<FailureKind, MediaResult> = { blocked: 'blocked', too_large: 'too_large', timeout: 'timeout', http: 'failed', network: 'failed', bad_url: 'blocked', aborted: 'failed' };

/**
 * Attachment download, started as soon as a message is recorded so it overlaps the debounce
 * window; a flush waits for its batch's downloads. At most `media.concurrency` downloads run
 * at once, the rest queue. A failed download never drops the message: it becomes a
 * `mediaErrors` entry.
 */
export class MediaStage {
  private readonly pending = new Map<string, Promise<PartMedia>>();
  private readonly waiting: Array<() => void> = [];
  private active = 0;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly stop = new AbortController();

  constructor(private readonly options: MediaStageOptions) {}

  /** Remove temporaries of a previous run and start the sweeper. */
  async start(): Promise<void> {
    const dirs = this.dirs();
    for (const [dir] of dirs) {
      const removed = await sweepTemporaries(dir);
      if (removed) this.options.logger.info({ dir, removed }, 'removed unfinished media downloads');
    }
    if (dirs.size === 0) return;
    // setInterval treats anything past 2^31-1 ms as 1 ms; clamp a long interval instead.
    const interval = Math.min(...[...dirs.values()].map((o) => o.sweepIntervalMs), 2_147_483_647);
    this.sweepTimer = setInterval(() => void this.sweep(), interval);
    this.sweepTimer.unref();
  }

  /** Every media folder in use, with the options that govern it. */
  private dirs(): Map<string, MediaOptions> {
    const dirs = new Map<string, MediaOptions>();
    for (const channel of this.options.channels) {
      const options = this.options.optionsFor(channel);
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

  /** Begin downloading a recorded part's attachments. */
  begin(part: BufferedPart): void {
    if (part.event.media.length === 0 || this.pending.has(part.id)) return;
    this.pending.set(part.id, this.fetchPart(part));
  }

  /** Wait for the downloads of a batch (starting any not yet begun, e.g. after a restart). */
  async collect(parts: readonly BufferedPart[]): Promise<PartMedia[]> {
    if (parts.every((part) => part.event.media.length === 0)) return parts.map(() => ({ media: [], errors: [] }));
    const results = await Promise.all(parts.map((part) => {
      this.begin(part);
      return this.pending.get(part.id) ?? Promise.resolve({ media: [], errors: [] });
    }));
    for (const part of parts) this.pending.delete(part.id);
    await this.touch(results.flatMap((r) => r.media));
    return results;
  }

  /** Mark files as used now (the sweeper keeps what was used within `ttlMs`). */
  async touch(items: readonly MediaItem[]): Promise<void> {
    const now = new Date(this.options.clock.now());
    await Promise.all(items.map((item) => utimes(resolve(this.options.cwd, item.path), now, now).catch(() => undefined)));
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.stop.abort();
    await Promise.allSettled([...this.pending.values()]);
  }

  private async fetchPart(part: BufferedPart): Promise<PartMedia> {
    const { channel, sessionKey } = part.event;
    const options = this.options.optionsFor(channel);
    const refs = part.event.media;
    const result: PartMedia = { media: [], errors: [] };
    const outcomes = await Promise.all(refs.slice(0, options.maxPerMessage).map((ref) => this.downloadOne(channel, sessionKey, ref, options)));
    for (const outcome of outcomes) {
      if ('reason' in outcome) result.errors.push(outcome);
      else result.media.push(outcome);
    }
    for (const ref of refs.slice(options.maxPerMessage)) {
      result.errors.push({ url: labelOf(channel, ref), reason: `too many attachments: more than media.maxPerMessage (${options.maxPerMessage})` });
    }
    return result;
  }

  private async downloadOne(channel: string, sessionKey: string, ref: MediaRef, options: MediaOptions): Promise<MediaItem | MediaFailure> {
    const label = labelOf(channel, ref);
    try {
      if (ref.size !== undefined && ref.size > options.maxBytes) {
        throw new MediaError('too_large', `declared ${ref.size} bytes, over media.maxBytes (${options.maxBytes})`, false);
      }
      const source = await this.resolveSource(channel, ref, options);
      const dir = resolve(this.options.cwd, options.dir);
      const folder = await ensureFolder(dir, sessionFolder(sessionKey));
      const id = nanoid();
      const staged = join(folder, id);
      const fetched = await this.slot(() => fetchToFile(source.url, staged, {
        maxBytes: options.maxBytes, timeoutMs: options.timeoutMs, retries: options.retries,
        allowHosts: options.allowHosts, allowPorts: options.allowPorts, signal: this.stop.signal,
        ...(source.headers ? { headers: source.headers } : {}),
      }));
      const sniffed = await fileTypeFromBuffer(fetched.head).catch(() => undefined);
      const declared = (ref.mimeType ?? source.mimeType ?? fetched.declaredType)?.split(';')[0]?.trim().toLowerCase();
      const mimeType = sniffed?.mime ?? (declared && mime.getExtension(declared) ? declared : 'application/octet-stream');
      const extension = sniffed?.ext ?? mime.getExtension(mimeType) ?? 'bin';
      const final = join(folder, `${id}.${extension}`);
      await rename(staged, final);
      this.options.metrics.media(channel, 'ok', fetched.bytes);
      this.options.logger.debug({ channel, path: final, bytes: fetched.bytes }, 'media stored');
      return { type: sniffed ? mediaTypeOf(mimeType) : ref.type ?? mediaTypeOf(mimeType), path: this.display(final), mime: mimeType, bytes: fetched.bytes, sha256: fetched.sha256 };
    } catch (error) {
      const kind: FailureKind = error instanceof MediaError ? error.kind : 'network';
      const reason = `${kind}: ${(error as Error).message}`;
      this.options.metrics.media(channel, resultOf[kind], 0);
      this.options.logger.warn({ channel, media: label, reason }, 'media download refused or failed');
      return { url: label, reason };
    }
  }

  private async resolveSource(channel: string, ref: MediaRef, options: MediaOptions): Promise<{ url: string; headers?: Record<string, string>; mimeType?: string }> {
    if (ref.url) return { url: ref.url };
    const resolver = this.options.adapterFor(channel)?.resolveMedia;
    if (!ref.ref || !resolver) throw new MediaError('bad_url', 'attachment has neither a URL nor a resolvable reference', false);
    const resolved = await resolver(ref, AbortSignal.any([AbortSignal.timeout(options.timeoutMs), this.stop.signal])).catch((error: unknown) => {
      if (error instanceof MediaError) throw error;
      throw new MediaError('http', `could not resolve the platform media id: ${(error as Error).message}`, false);
    });
    if (resolved.size !== undefined && resolved.size > options.maxBytes) {
      throw new MediaError('too_large', `platform reports ${resolved.size} bytes, over media.maxBytes (${options.maxBytes})`, false);
    }
    return resolved;
  }

  /** Path for the output: relative to the working directory when inside it. */
  private display(path: string): string {
    const rel = relative(this.options.cwd, path);
    return rel.startsWith('..') || isAbsolute(rel) ? path : rel;
  }

  /** Run `task` within the global concurrency cap. */
  private async slot<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.options.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await task();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

/** How an attachment is named in errors and logs: its URL, or `<adapter>:<ref>`; never a resolved (token-bearing) URL. */
function labelOf(channel: string, ref: MediaRef): string {
  return ref.url ?? `${channel}:${ref.ref ?? 'unknown'}`;
}
