import { z } from 'zod';

/*
 * Second thoughts (contract §13): how long the recalls and edits of a session are kept, and how
 * a human taking a session over holds its agent back. Global keys: they describe people, not
 * channels.
 */

export const secondThoughtDefaults = {
  // An hour: recalls and edits come within minutes (QQ and WeChat allow two); the ids of emitted
  // messages are known as long (in the process, the newest 250,000, for the memory and SQLite
  // stores). 500 per session: a moderator's bulk delete does not push out a recall still needed.
  revisions: { enabled: true, maxPerSession: 500, ttlMs: 3_600_000 },
  // Ten minutes after the human's last message, at most an hour: a shop owner answering from the
  // phone, not a pause with no end (the contract's defaults).
  takeover: { holdMs: 600_000, maxMs: 3_600_000, operators: [] as string[] },
} as const;

const positive = z.number().int().positive();

/** Reading a OneBot merged forward (get_forward_msg) while its window is open: how much, how deep, how long. */
export const forwardsSchema = z
  .object({
    /** Messages kept of one merged forward, nested ones included. */
    maxNodes: z.number().int().min(1).max(1000),
    /** Merged forwards nested in one another that are read (1: the outer one only). */
    maxDepth: z.number().int().min(1).max(10),
    /** Characters of text kept of one merged forward, nested ones included (senders' names and media references too). */
    maxChars: z.number().int().min(1).max(1_000_000),
    /** From admission: past this the forward is left unread, a `forwardErrors` entry. */
    timeoutMs: positive,
  })
  .strict();

export type ForwardsOptions = z.infer<typeof forwardsSchema>;

export const secondThoughtShape = {
  revisions: z
    .object({
      /** Off: recalls and edits reach the agent as notices and new messages, as before. */
      enabled: z.boolean(),
      maxPerSession: z.number().int().min(1).max(10_000),
      ttlMs: positive,
    })
    .strict(),
  takeover: z
    .object({
      holdMs: positive,
      maxMs: positive,
      /** Accounts whose messages mean a human is answering: `<namespace>:<user id>`, or a bare user id in any namespace. */
      operators: z.array(z.string().min(1).max(256)).max(10_000),
    })
    .strict(),
};

export type RevisionOptions = z.infer<typeof secondThoughtShape.revisions>;
export type TakeoverOptions = z.infer<typeof secondThoughtShape.takeover>;
