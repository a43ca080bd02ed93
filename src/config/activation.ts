import { z } from 'zod';
import { ConfigError } from '../core/errors.js';

/*
 * Which messages reach the agent: activation, context, access and budgets. Each key is set
 * globally or inside a channel object (the channel wins); the defaults emit everything.
 */

/** The defaults of activation, context, access and budgets: everything reaches the agent. */
export const reachDefaults = {
  activation: {
    group: 'always',
    private: 'always',
    wakeWords: [] as string[],
    patterns: [] as string[],
    replyToBot: true,
    commands: true,
    conversations: {} as Record<string, { group?: ActivationMode; private?: ActivationMode }>,
  },
  // 50 messages, an hour, 8,000 characters: OpenClaw's group history holds 50 messages; 8,000
  // characters is a few pages of chat, a small share of any model's context window.
  context: { maxMessages: 50, maxAgeMs: 3_600_000, maxChars: 8_000 },
  access: { lists: {} as Record<string, string[]>, allow: [] as string[], deny: [] as string[] },
  budgets: [] as Budget[],
} as const;

export const activationModes = ['always', 'mention', 'never'] as const;
/** `always`: every batch; `mention`: only a batch addressed to one of our bots; `never`: none (all context). */
export type ActivationMode = (typeof activationModes)[number];

const mode = z.enum(activationModes, { error: 'must be "always", "mention" or "never"' });

/** A session key as outputs carry it: 1-512 characters, no control characters. */
export const sessionKeyText = z
  .string()
  .min(1, 'a session key, not empty')
  .max(512, 'a session key of at most 512 characters')
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'a session key without control characters');

/** A run-time or configured override of one conversation's modes. */
export const activationOverrideSchema = z
  .object({ group: mode.optional(), private: mode.optional() })
  .strict()
  .refine((value) => value.group !== undefined || value.private !== undefined, 'must set "group" or "private"');
export type ActivationOverride = z.infer<typeof activationOverrideSchema>;

/** A JS regular expression source, compiled with flag `i` at start so a bad one fails there. */
const pattern = z
  .string()
  .min(1, 'a regular expression, not empty')
  .max(500, 'a regular expression of at most 500 characters')
  .superRefine((source, ctx) => {
    try {
      new RegExp(source, 'i');
    } catch (error) {
      ctx.addIssue({ message: `is not a valid regular expression: ${(error as Error).message}`, code: 'custom' });
    }
  });

export const activationSchema = z
  .object({
    group: mode,
    private: mode,
    /** Words a message may start with (case-insensitive, after leading mentions and blanks) to address the bots. */
    wakeWords: z
      .array(z.string().trim().min(1, 'a word, not empty or spaces').max(64, 'a word of at most 64 characters'))
      .max(100, 'at most 100 words'),
    patterns: z.array(pattern).max(100, 'at most 100 patterns'),
    /** A reply to a message one of our bots sent addresses the bots. */
    replyToBot: z.boolean(),
    /** A `/command` addresses the bots. */
    commands: z.boolean(),
    /** Modes per session key, over the channel's and the global ones. */
    conversations: z.record(sessionKeyText, activationOverrideSchema),
  })
  .strict();
export type ActivationOptions = z.infer<typeof activationSchema>;

export const contextSchema = z
  .object({
    /** Messages kept per conversation between two outputs (the oldest go first). 0: none kept. */
    maxMessages: z.number().int().min(0).max(1_000),
    /** A kept message older than this is left out. */
    maxAgeMs: z.number().int().min(1),
    /** The characters an output's context holds at most (the oldest messages go first). */
    maxChars: z.number().int().min(0).max(1_000_000),
  })
  .strict();
export type ContextOptions = z.infer<typeof contextSchema>;

/** `<namespace>:<sender id>`, a session key, or `@<list>`. */
const accessEntry = z.string().min(1, 'a sender, a session key or "@list", not empty').max(512);
const listName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" or "-", at most 64');

export const accessSchema = z
  .object({
    /** Named lists the entries of `allow` and `deny` refer to as `@name`. */
    lists: z.record(listName, z.array(accessEntry).max(100_000)),
    allow: z.array(accessEntry).max(100_000),
    deny: z.array(accessEntry).max(100_000),
  })
  .strict();
export type AccessOptions = z.infer<typeof accessSchema>;

export const budgetSchema = z
  .object({
    per: z.enum(['sender', 'conversation', 'channel'], { error: 'must be "sender", "conversation" or "channel"' }),
    /** Emitted batches per window; at least 1 (to emit nothing, use activation "never"). */
    limit: z.number().int().min(1, 'at least 1 (activation "never" emits nothing)'),
    windowMs: z.number().int().min(1),
    /** `merge`: held and merged into the next allowed output; `drop`: kept as context only. */
    action: z.enum(['merge', 'drop'], { error: 'must be "merge" or "drop"' }),
  })
  .strict();
export type Budget = z.infer<typeof budgetSchema>;
export const budgetsSchema = z.array(budgetSchema).max(20, 'at most 20 budgets');

/** The global keys, whole. */
export const reachShape = {
  activation: activationSchema,
  context: contextSchema,
  access: accessSchema,
  budgets: budgetsSchema,
};

/** A channel's keys: each part optional, over the global ones (a channel's `budgets` replace them). */
export const channelReachShape = {
  activation: activationSchema.partial().optional(),
  context: contextSchema.partial().optional(),
  access: accessSchema.partial().optional(),
  budgets: budgetsSchema.optional(),
};

/** What a channel runs with: its own keys over the global ones. */
export interface ChannelReach {
  activation: ActivationOptions;
  context: ContextOptions;
  access: AccessOptions;
  budgets: readonly Budget[];
}

type Partial2<T> = { [K in keyof T]?: Partial<T[K]> | undefined };

/**
 * A channel's keys over the global ones: `conversations` and `lists` merge by key (the channel's
 * entries win), everything else is replaced. A `@list` that names no list, in either place,
 * is an error naming the setting.
 */
export function channelReach(global: ChannelReach, own: Partial2<ChannelReach>, at: string): ChannelReach {
  const activation = {
    ...global.activation,
    ...own.activation,
    conversations: { ...global.activation.conversations, ...own.activation?.conversations },
  } as ActivationOptions;
  const access = {
    ...global.access,
    ...own.access,
    lists: { ...global.access.lists, ...own.access?.lists },
  } as AccessOptions;
  const prefix = own.access === undefined ? '' : at;
  for (const key of ['allow', 'deny'] as const) {
    access[key].forEach((entry, i) => {
      if (entry.startsWith('@') && !Object.hasOwn(access.lists, entry.slice(1))) {
        const names = Object.keys(access.lists);
        throw new ConfigError(
          `${own.access?.[key] ? prefix : ''}access.${key}[${i}]: "${entry}" names no list of access.lists (${names.length ? `lists: ${names.join(', ')}` : 'none is defined'})`,
        );
      }
    });
  }
  return {
    activation,
    context: { ...global.context, ...own.context } as ContextOptions,
    access,
    budgets: (own.budgets as Budget[] | undefined) ?? global.budgets,
  };
}
