import { z } from 'zod';
import { channelReachShape, reachDefaults, reachShape, type ChannelReach } from './activation.js';
import { forwardsSchema, secondThoughtDefaults, secondThoughtShape, type ForwardsOptions } from './second-thoughts.js';
export type { ForwardsOptions } from './second-thoughts.js';

/** The defaults of every setting (docs/configuration.md), in one place. */
export const defaults = {
  server: {
    host: '127.0.0.1',
    port: 8787,
    bodyLimitBytes: 1_048_576,
    maxDepth: 64,
    maxKeys: 10_000,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    keepAliveTimeoutMs: 5_000,
    maxConnections: 1_000,
    drainMs: 5_000,
    allowedHosts: [] as string[],
  },
  store: 'sqlite:./data/intake.db',
  dedup: { idTtlMs: 300_000, fuzzyWindowMs: 2_000, fuzzy: 'no-id', maxKeys: 1_000_000 },
  // maxOpenBuffers: a buffer holds about a kilobyte a message (bench/buffer-memory.mjs), so 50,000
  // is ~50 MB of heap; a healthy service has about (new sessions a second) x windowMs open, under
  // 20,000 at the ~12k deliveries/s one SQLite instance takes. maxWaitMs already bounds how
  // long a chatty session waits, so maxMessages only bounds how much one merged message holds:
  // 10 keeps a thought typed in several lines (or a long paste a platform split) whole.
  debounce: {
    windowMs: 1_500,
    maxMessages: 10,
    maxWaitMs: 7_500,
    media: 'all',
    flushCommands: true,
    maxOpenBuffers: 50_000,
  },
  media: {
    dir: './media',
    maxBytes: 20_971_520,
    timeoutMs: 30_000,
    retries: 3,
    ttlMs: 604_800_000,
    sweepIntervalMs: 3_600_000,
    allowHosts: [] as string[],
    allowPorts: [] as number[],
    maxPerMessage: 10,
    concurrency: 8,
  },
  correlation: {
    crossAdapter: true,
    messageWindowMs: 15_000,
    eventWindowMs: 60_000,
    maxGroups: 4_096,
    noticeHoldMs: 1_000,
  },
  events: { retentionMs: 86_400_000, retentionCount: 10_000, maxStreams: 100 },
  trace: { retentionMs: 3_600_000, maxEntries: 20_000, shared: true },
  redis: { commandTimeoutMs: 1_000, waitReplicas: 0, keyPrefix: 'ai', shards: 3 },
  turns: { mode: 'off', maxMs: 120_000, maxHeld: 20 },
  forwards: { maxNodes: 100, maxDepth: 3, maxChars: 20_000, timeoutMs: 10_000 },
  // 36 attempts, 0.5 s doubling to an hour (jittered up to 2x below the cap): the last one lands
  // about a day after the first (23-24 h), so an agent that is down for a redeploy or a night
  // still gets its messages; Svix retries for ~27 h, Stripe for 3 days.
  agent: {
    timeoutMs: 10_000,
    retries: 36,
    concurrency: 16,
    maxPending: 100_000,
    minBackoffMs: 500,
    maxBackoffMs: 3_600_000,
  },
  ...reachDefaults,
  ...secondThoughtDefaults,
} as const;

/**
 * Standard Webhooks (standardwebhooks.com) secrets are `whsec_` plus the base64 of 24 to 64
 * random bytes; anything shorter is guessable, and the agent's verifier expects the prefix.
 * Returns what is wrong with `secret` (never the secret itself), or undefined.
 */
export function standardWebhooksSecretProblem(secret: string): string | undefined {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  if (!match) return 'it must start with "whsec_" followed by base64';
  const bytes = Buffer.from(match[1] as string, 'base64').length;
  return bytes >= 24 && bytes <= 64 ? undefined : `it decodes to ${bytes} bytes`;
}

const ms = z.number().int().min(0);
const positive = z.number().int().min(1);

export const dedupSchema = z
  .object({
    idTtlMs: positive,
    fuzzyWindowMs: ms,
    fuzzy: z.enum(['no-id', 'always', 'off']),
    maxKeys: positive,
  })
  .strict();

export const debounceSchema = z
  .object({
    windowMs: ms,
    maxMessages: positive,
    maxWaitMs: ms,
    media: z.enum(['all', 'first']),
    flushCommands: z.boolean(),
    /**
     * Words that, as a whole message (trimmed, in any case), flush its buffer at once as a
     * command does: `["stop", "停", "等等"]`. @default none
     */
    flushWords: z
      .array(z.string().trim().min(1, 'a word, not empty or spaces').max(64, 'a word of at most 64 characters'), {
        error: 'must be an array of words',
      })
      .max(100, 'at most 100 words')
      .optional(),
    /** A typing signal holds its sender's open buffer this long past it, within maxWaitMs; 0: off. @default 3000 (admission.ts) */
    typingMs: ms.optional(),
    /** Open buffers (every channel's; on Redis every instance's) past which deliveries get 503 + Retry-After. Global only. */
    maxOpenBuffers: positive,
  })
  .strict();

/** Agent turns (docs/turns.md): what batches closing while the agent answers do. */
export const turnsSchema = z
  .object({
    mode: z.enum(['off', 'collect', 'followup', 'steer', 'interrupt']),
    maxMs: positive,
    maxHeld: positive,
  })
  .strict();

const hostEntry = z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/, 'a host or host:port');

export const mediaSchema = z
  .object({
    dir: z.string().min(1),
    maxBytes: positive,
    timeoutMs: positive,
    retries: z.number().int().min(0).max(20),
    ttlMs: positive,
    sweepIntervalMs: positive,
    allowHosts: z.array(hostEntry),
    allowPorts: z.array(z.number().int().min(1).max(65535)),
    maxPerMessage: positive,
    concurrency: positive,
    /** Downloads of one sender (debounce key) at once. @default half of `concurrency`, at least 1 */
    perSenderConcurrency: positive.optional(),
  })
  .strict();

const channelId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" or "-", at most 64');

/** Channel fields common to every adapter; each adapter adds its own strict settings (channelSchemaFor). */
export const channelFields = {
  id: channelId,
  verify: z.boolean().optional(),
  namespace: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" or "-"')
    .optional(),
  dedup: dedupSchema.partial().optional(),
  debounce: debounceSchema.omit({ maxOpenBuffers: true }).partial().optional(),
  media: mediaSchema.partial().optional(),
  turns: turnsSchema.partial().optional(),
  forwards: forwardsSchema.partial().optional(),
  ...channelReachShape,
};

/**
 * What the config needs of an adapter to validate its channels: the part of an adapter
 * descriptor (src/adapters/kit/descriptor.ts) that is data. Declared here, not imported, so config
 * never imports adapters: adapters import config types, and the loader is handed the list.
 */
export interface ChannelKind {
  readonly name: string;
  readonly settings: z.ZodObject<z.ZodRawShape, z.core.$strict>;
  readonly secret?: { readonly setting: string; readonly required: boolean; readonly why?: string };
  /** The secret rule when it depends on other settings (OneBot's transport); else `secret`. */
  readonly secretFor?: (settings: Readonly<Record<string, unknown>>) => {
    readonly setting: string;
    readonly required: boolean;
    readonly why?: string;
  };
  /** How long the platform retries one delivery, ms: a channel's exact-id window is at least this unless it sets its own. */
  readonly retryHorizonMs?: number;
  /** How long a captured signed delivery stays fresh from its first arrival, ms (twice the timestamp tolerance): the exact-id window is at least this too. */
  readonly replayHorizonMs?: (settings: Readonly<Record<string, unknown>>) => number;
}

/** The secret rule of a channel of this kind with these settings. */
export function secretRuleOf(kind: ChannelKind, settings: Readonly<Record<string, unknown>>): ChannelKind['secret'] {
  return kind.secretFor?.(settings) ?? kind.secret;
}

/** The problem with a channel's secret, or undefined: a channel is unsigned only when it says `"verify": false`. */
export function missingSecret(
  kind: ChannelKind,
  verify: boolean | undefined,
  settings: Readonly<Record<string, unknown>>,
): string | undefined {
  const rule = secretRuleOf(kind, settings);
  if (!rule?.required || verify === false) return undefined;
  const value = settings[rule.setting];
  if (value !== undefined && value !== '') return undefined;
  return `is required: the ${kind.name} adapter ${rule.why ?? 'verifies signatures'} (set "verify": false on the channel to accept unsigned requests)`;
}

/** `the whatsapp adapter takes appSecret, verifyToken, ...`: what a misspelt key is told. */
export function settingsOf(kind: ChannelKind): string {
  const keys = Object.keys(kind.settings.shape);
  return keys.length === 0
    ? `the ${kind.name} adapter takes no settings of its own`
    : `the ${kind.name} adapter takes ${keys.join(', ')}`;
}

/**
 * One channel entry: a union on `adapter`, each member the common fields plus that adapter's
 * strict settings, and its secret rule.
 */
export function channelSchemaFor(kinds: readonly ChannelKind[]) {
  const names = kinds.map((kind) => JSON.stringify(kind.name)).join(', ');
  const members = kinds.map((kind) =>
    z
      .strictObject(
        { ...channelFields, adapter: z.literal(kind.name), ...kind.settings.shape },
        {
          error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown setting; ${settingsOf(kind)}` : undefined),
        },
      )
      .check((ctx) => {
        const problem = missingSecret(kind, ctx.value.verify, ctx.value);
        if (problem)
          ctx.issues.push({
            code: 'custom',
            path: [secretRuleOf(kind, ctx.value)?.setting ?? '?'],
            message: problem,
            input: ctx.value,
          });
      }),
  );
  const [first, ...rest] = members;
  if (!first) throw new TypeError('channelSchemaFor needs at least one adapter');
  return z.discriminatedUnion('adapter', [first, ...rest], {
    error: (issue) => (issue.code === 'invalid_union' ? `must be one of ${names}` : undefined),
  });
}

/** Everything but `channels`, whose schema depends on the adapters (configSchemaFor). */
const configShape = {
  server: z
    .object({
      host: z.string().min(1),
      port: z.number().int().min(0).max(65535),
      bodyLimitBytes: positive,
      maxDepth: positive,
      /** Object keys plus array items a body may hold, counted before parsing. */
      maxKeys: positive,
      /** Time a client has to send its request headers. */
      headersTimeoutMs: positive,
      /** Time a client has to send its whole request, body included (at least headersTimeoutMs). */
      requestTimeoutMs: positive,
      /** Idle time a kept-alive socket stays open; above the load balancer's idle timeout behind one. */
      keepAliveTimeoutMs: positive,
      /** Open sockets at once; the ones past it are closed on arrival. */
      maxConnections: positive,
      /** After SIGTERM, how long /readyz answers 503 (deliveries still taken) before the listener closes; 0: close at once. */
      drainMs: ms,
      apiToken: z.string().optional(),
      /**
       * Host names /v1/* and /metrics answer besides loopback names and `host` (a proxy's, a
       * tunnel's); `*` answers any. Without apiToken, also the pages whose Origin may change state.
       */
      allowedHosts: z.array(
        z
          .string()
          .regex(
            /^(\*|(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?)$/,
            'a host name or host:port as browsers send it in Host (no scheme, no path), or * for any',
          ),
      ),
    })
    .strict(),
  store: z
    .string()
    .regex(
      /^(memory|sqlite:.+|rediss?:\/\/.+|redis-cluster:\/\/.+)$/,
      '"memory", "sqlite:<path>", "redis://[:password@]host:port[/db]" (or rediss://) or "redis-cluster://host:port[,host:port...]"',
    ),
  dedup: dedupSchema,
  debounce: debounceSchema,
  media: mediaSchema,
  turns: turnsSchema,
  forwards: forwardsSchema,
  correlation: z
    .object({
      crossAdapter: z.boolean(),
      messageWindowMs: positive,
      eventWindowMs: positive,
      maxGroups: positive,
      noticeHoldMs: ms,
    })
    .strict(),
  events: z.object({ retentionMs: positive, retentionCount: positive, maxStreams: positive }).strict(),
  /**
   * The verdict trail (`/v1/trace`, `/v1/activity`): kept this long, and this many entries at most;
   * `shared` (on a shared store): in the store, every instance's, or false: each instance its own
   * (no Redis work for the trail).
   */
  trace: z.object({ retentionMs: positive, maxEntries: positive, shared: z.boolean() }).strict(),
  redis: z
    .object({
      commandTimeoutMs: positive,
      waitReplicas: z.number().int().min(0).max(16),
      keyPrefix: z.string().regex(/^[A-Za-z0-9_:-]{1,32}$/, 'letters, digits, "_", ":" or "-", at most 32'),
      /** redis-cluster:// only: shards the sessions are spread over, fixed once the store holds data. */
      shards: z.number().int().min(1).max(1024),
    })
    .strict(),
  agent: z
    .object({
      url: z.url({ protocol: /^https?$/ }).optional(),
      /** Checked by loadConfig with isStandardWebhooksSecret, so the message can say why. */
      secret: z.string().optional(),
      timeoutMs: positive,
      retries: z.number().int().min(0).max(50),
      concurrency: positive,
      maxPending: positive,
      minBackoffMs: positive,
      maxBackoffMs: positive,
      /**
       * Agent workers pull outputs (docs/http.md, claims) instead of a push; set without `url`.
       * A lease runs `leaseMs` (1 s to an hour); past `maxAttempts` taken leases (1 to 100) an
       * output is a dead letter. @default off ({leaseMs: 60000, maxAttempts: 10} when set)
       */
      claims: z
        .object({
          leaseMs: z.number().int().min(1_000).max(3_600_000).default(60_000),
          maxAttempts: z.number().int().min(1).max(100).default(10),
        })
        .strict()
        .optional(),
    })
    .strict(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  ...reachShape,
  ...secondThoughtShape,
};

/** A channel entry as parsed: the common fields, `adapter`, and that adapter's parsed settings. */
export type RawChannel = z.output<z.ZodObject<typeof channelFields>> & { adapter: string } & Record<string, unknown>;

/** The whole config file's schema, its channels checked by the given adapters. */
export function configSchemaFor(kinds: readonly ChannelKind[]) {
  return z
    .strictObject({ ...configShape, channels: z.array(channelSchemaFor(kinds) as z.ZodType<RawChannel>).min(1) })
    .check((ctx) => {
      const { events, server } = ctx.value;
      // Every event stream holds a socket: more streams than sockets could never all be open, and
      // the streams would take the sockets webhooks need.
      if (events.maxStreams > server.maxConnections) {
        ctx.issues.push({
          code: 'custom',
          path: ['events', 'maxStreams'],
          input: events.maxStreams,
          message: `${events.maxStreams} is more than server.maxConnections (INTAKE_MAX_CONNECTIONS) ${server.maxConnections}: every event stream holds one of those connections; lower events.maxStreams or raise server.maxConnections`,
        });
      }
    });
}

export type RawConfig = z.output<z.ZodObject<typeof configShape>> & { channels: RawChannel[] };
export type DedupOptions = z.infer<typeof dedupSchema>;
export type DebounceOptions = z.infer<typeof debounceSchema>;
export type MediaOptions = z.infer<typeof mediaSchema>;
export type TurnsOptions = z.infer<typeof turnsSchema>;

/** A channel with every stage option resolved (global value, overridden by the channel's own). */
export interface ChannelConfig extends ChannelReach {
  id: string;
  /** The adapter's name, as configured (one of the registry's). */
  adapter: string;
  verify: boolean;
  namespace?: string;
  dedup: DedupOptions;
  debounce: DebounceOptions;
  media: MediaOptions;
  turns: TurnsOptions;
  forwards: ForwardsOptions;
  /**
   * Adapter-specific settings (secrets, tokens, base URLs), parsed by the adapter's strict
   * schema: only its declared keys, so a plain object is safe here.
   */
  settings: Readonly<Record<string, unknown>>;
  /** Position in `channels`, to name settings in errors (`channels[2].appSecret`). */
  index: number;
}

export type Config = Readonly<Omit<RawConfig, 'channels'> & { channels: readonly ChannelConfig[] }>;
