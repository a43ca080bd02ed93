import { z } from 'zod';
import { counted } from '../../core/errors.js';
import { kindOf, MAX_TIMESTAMP_S } from '../kit/shape.js';

/** One raw message of the generic channel, as accepted. */
export interface GenericMessage {
  id?: string | number;
  sessionKey: string;
  sender?: { id: string | number; name?: string };
  content?: string;
  mediaUrl?: string;
  mimeType?: string;
  media?: Array<{ url: string; mimeType?: string }>;
  /** Seconds since 1970, before the year 3000. */
  timestamp?: number;
  conversation?: { type: 'private' | 'group'; id: string };
}

const MAX_BATCH = 100;
const MAX_MEDIA = 32;

// ---- The hot path: plain checks, no allocation beyond the result array. Keep in step with the
// zod schema below; test/adapters/generic-shape.test.ts runs both over fuzzed bodies.

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const stringUpTo = (v: unknown, min: number, max: number): boolean =>
  typeof v === 'string' && v.length >= min && v.length <= max;
const optional = (v: unknown, check: (v: unknown) => boolean): boolean => v === undefined || check(v);
const idLike = (v: unknown): boolean => stringUpTo(v, 1, 256) || Number.isSafeInteger(v);
const isTimestamp = (v: unknown): boolean =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 && v < MAX_TIMESTAMP_S;

function isMediaItem(v: unknown): boolean {
  return isObject(v) && stringUpTo(v.url, 1, 4096) && optional(v.mimeType, (m) => stringUpTo(m, 0, 255));
}

function isMessage(v: unknown): v is GenericMessage {
  if (!isObject(v)) return false;
  const { id, sessionKey, sender, content, mediaUrl, mimeType, media, timestamp, conversation } = v;
  if (!stringUpTo(sessionKey, 1, 512) || !optional(id, idLike)) return false;
  if (
    sender !== undefined &&
    !(isObject(sender) && idLike(sender.id) && optional(sender.name, (n) => stringUpTo(n, 0, 256)))
  )
    return false;
  if (
    !optional(content, (c) => stringUpTo(c, 0, 65_536)) ||
    !optional(mediaUrl, (u) => stringUpTo(u, 1, 4096)) ||
    !optional(mimeType, (m) => stringUpTo(m, 0, 255))
  )
    return false;
  if (media !== undefined && !(Array.isArray(media) && media.length <= MAX_MEDIA && media.every(isMediaItem)))
    return false;
  if (!optional(timestamp, isTimestamp)) return false;
  if (
    conversation !== undefined &&
    !(
      isObject(conversation) &&
      (conversation.type === 'private' || conversation.type === 'group') &&
      stringUpTo(conversation.id, 1, 256)
    )
  )
    return false;
  return (
    (typeof content === 'string' && content.trim() !== '') ||
    mediaUrl !== undefined ||
    (Array.isArray(media) && media.length > 0)
  );
}

/** The messages of a generic body, or undefined when it is not one (then `explainGenericBody` says why). */
export function genericMessagesOf(body: unknown): GenericMessage[] | undefined {
  if (Array.isArray(body))
    return body.length >= 1 && body.length <= MAX_BATCH && body.every(isMessage)
      ? (body as GenericMessage[])
      : undefined;
  return isMessage(body) ? [body] : undefined;
}

// ---- The explanation: the same rules as a zod schema whose messages say what is allowed.

/** What came instead, for a message: `a string`, `the number 5`, `a string of 600 characters`. */
function got(input: unknown): string {
  if (typeof input === 'string' && input !== '') return `a string of ${counted(input.length, 'character')}`;
  if (Array.isArray(input) && input.length > 0) return `an array of ${counted(input.length, 'item')}`;
  return kindOf(input);
}

/** One message for every issue of a field: `is required (<what>)` or `must be <what>, got <input>`. */
const must = (what: string, hint?: (input: unknown) => string) => ({
  error: (issue: { input?: unknown }) =>
    issue.input === undefined
      ? `is required (${what})`
      : `must be ${what}, got ${got(issue.input)}${hint?.(issue.input) ?? ''}`,
});

const text = (min: number, max: number, what: string) => z.string(must(what)).min(min, must(what)).max(max, must(what));
const idText = 'a non-empty string of at most 256 characters, or a whole number';
const id = z.union([z.string().min(1).max(256), z.number().int()], must(idText));
const mediaItem = z.object(
  { url: text(1, 4096, 'a URL string'), mimeType: text(0, 255, 'a MIME type string').optional() },
  must('an object {url, mimeType?}'),
);
const timestamp = z
  .number(must('seconds since 1970 (a number below 32503680000, the year 3000)'))
  .min(0, must('seconds since 1970, not negative'))
  .lt(
    MAX_TIMESTAMP_S,
    must('seconds since 1970 before the year 3000', (input) =>
      typeof input === 'number' && input < MAX_TIMESTAMP_S * 1000 ? ' (milliseconds where seconds belong?)' : '',
    ),
  );

export const genericMessageSchema = z
  .object(
    {
      id: id.optional(),
      sessionKey: text(1, 512, 'a non-empty string of at most 512 characters'),
      sender: z
        .object(
          { id, name: text(0, 256, 'a string of at most 256 characters').optional() },
          must('an object {id, name?}'),
        )
        .optional(),
      content: text(0, 65_536, 'a string of at most 65536 characters').optional(),
      mediaUrl: text(1, 4096, 'a non-empty URL string of at most 4096 characters').optional(),
      mimeType: text(0, 255, 'a MIME type string').optional(),
      media: z
        .array(mediaItem, must(`an array of at most ${MAX_MEDIA} {url, mimeType?} objects`))
        .max(MAX_MEDIA, must(`an array of at most ${MAX_MEDIA} {url, mimeType?} objects`))
        .optional(),
      timestamp: timestamp.optional(),
      conversation: z
        .object(
          {
            type: z.enum(['private', 'group'], must('"private" or "group"')),
            id: text(1, 256, 'a non-empty string of at most 256 characters'),
          },
          must('an object {type: "private"|"group", id}'),
        )
        .optional(),
    },
    must('a message object {sessionKey, content?, ...}'),
  )
  .refine(
    (m) =>
      (m.content !== undefined && m.content.trim() !== '') || m.mediaUrl !== undefined || (m.media?.length ?? 0) > 0,
    {
      error: 'needs one of content (not blank), mediaUrl or media',
    },
  );

const batchSchema = z
  .array(genericMessageSchema)
  .min(1, must(`1 to ${MAX_BATCH} messages`))
  .max(MAX_BATCH, must(`1 to ${MAX_BATCH} messages`));

/** Whether zod accepts the body: the reference the hot-path check must agree with. */
export function zodAcceptsGenericBody(body: unknown): boolean {
  return (Array.isArray(body) ? batchSchema : genericMessageSchema).safeParse(body).success;
}

/** Why a body is not a generic message, naming the field: `[0].sender must be an object {id, name?}, got a string`. */
export function explainGenericBody(body: unknown): string {
  if (!Array.isArray(body) && (typeof body !== 'object' || body === null)) {
    return `the body must be one message object or an array of 1 to ${MAX_BATCH} of them, got ${got(body)}`;
  }
  const result = (Array.isArray(body) ? batchSchema : genericMessageSchema).safeParse(body);
  const issue = result.error?.issues[0];
  if (!issue) return 'it is not one';
  const path = issue.path
    .map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
    .join('')
    .replace(/^\./, '');
  return `${path || (Array.isArray(body) ? 'the body' : 'the message')} ${issue.message}`;
}
