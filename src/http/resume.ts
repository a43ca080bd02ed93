import type Koa from 'koa';
import { RequestError } from '../core/errors.js';
import { outputJson } from '../events/output.js';
import type { TraceEntry } from '../events/trace.js';
import type { OutboxLife, OutboxRecord } from '../core/ports/index.js';
import { numericParam } from './query.js';

/*
 * What an event stream's ids say, and where a client that sends one back resumes. An id is
 * `<seq>@<life>`: the record's seq and the life of the seqs it was read in (`OutboxLife`: a
 * store that lost data assigns seqs again, in a new life). A stream whose seqs have no life
 * sends the plain `<seq>`; a plain seq sent back (from such a stream, or from a release before
 * lives) is taken as the seq alone, as it always was.
 */

/** A client's resume point: the seq it has, and the life of the seqs its id named (if any). */
export interface ResumePoint {
  seq: number;
  life?: string;
}

/** Where a replay starts (after `after`), and the frame the client is told first, if any. */
export interface ReplayStart {
  after: number;
  reset?: string;
}

/** `Last-Event-ID` wins over `?after=`; neither means live only. */
export function resumePoint(ctx: Koa.Context): ResumePoint | undefined {
  const after = numericParam(ctx, 'after', 'bad_resume_point', 'the id of the last event you have');
  const raw = ctx.get('last-event-id') || (after ?? '');
  if (raw === '') return undefined;
  // Up to 16 digits: the trail on Redis numbers entries by time (`<ms> * 1000 + n`).
  const match = /^(\d{1,16})(?:@([\w-]{1,64}))?$/.exec(raw);
  if (!match || !Number.isSafeInteger(Number(match[1]))) {
    throw new RequestError(
      'bad_resume_point',
      400,
      `Last-Event-ID / after must be the id of an event as the stream sent it, <seq> or <seq>@<life> (got "${raw.slice(0, 80)}")`,
    );
  }
  return match[2] === undefined ? { seq: Number(match[1]) } : { seq: Number(match[1]), life: match[2] };
}

/**
 * Where the replay for `point` starts in a stream whose seqs are now in `life`. A plain seq, or
 * an id of this life, resumes after its seq. An id of another life names a seq the store may
 * have assigned again since it lost data: the client is told so first (`event: gap` with
 * `reset: true`) and the replay starts again where this life began, or after the client's seq
 * when that is lower (what lies before the life began is older still), so that the records
 * that reused its seqs are neither skipped nor taken for the ones it had.
 */
export function replayStart(point: ResumePoint, life: OutboxLife | undefined): ReplayStart {
  if (point.life === undefined || point.life === life?.tag) return { after: point.seq };
  const after = Math.min(point.seq, life?.since ?? 0);
  return { after, reset: gapFrame({ after: point.seq, next: after + 1, reset: true }) };
}

/** An event's id: its seq, and the life of the seqs when the stream has one. */
export function eventId(seq: number, life: OutboxLife | undefined): string {
  return life ? `${seq}@${life.tag}` : String(seq);
}

/** Records after `after` and before `next` will not come (trimmed); with `reset`, `after` was of another life. */
export function gapFrame(gap: { after: number; next: number; reset?: true }): string {
  return `event: gap\ndata: ${JSON.stringify(gap)}\n\n`;
}

export function outputFrame(record: OutboxRecord, life: OutboxLife | undefined): string {
  return `id: ${eventId(record.seq, life)}\nevent: ${record.type}\ndata: ${outputJson(record)}\n\n`;
}

export function activityFrame(entry: TraceEntry, life: OutboxLife | undefined): string {
  return `id: ${eventId(entry.n, life)}\nevent: activity\ndata: ${JSON.stringify(entry)}\n\n`;
}
