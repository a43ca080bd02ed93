import { channelReach } from './activation.js';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigError } from '../core/errors.js';
import { describeIssue } from './issues.js';
import {
  configSchemaFor,
  defaults,
  standardWebhooksSecretProblem,
  type ChannelConfig,
  type ChannelKind,
  type Config,
} from './schema.js';

type EnvKind = 'string' | 'int' | 'bool' | 'list' | 'intList';

/**
 * Every environment variable the service reads, and where it lands in the config.
 * Keep in step with .env.example and the table of docs/configuration.md.
 */
export const envSettings: ReadonlyArray<readonly [name: string, path: string, kind: EnvKind]> = [
  ['HOST', 'server.host', 'string'],
  ['PORT', 'server.port', 'int'],
  ['INTAKE_BODY_LIMIT_BYTES', 'server.bodyLimitBytes', 'int'],
  ['INTAKE_MAX_DEPTH', 'server.maxDepth', 'int'],
  ['INTAKE_MAX_KEYS', 'server.maxKeys', 'int'],
  ['INTAKE_HEADERS_TIMEOUT_MS', 'server.headersTimeoutMs', 'int'],
  ['INTAKE_REQUEST_TIMEOUT_MS', 'server.requestTimeoutMs', 'int'],
  ['INTAKE_KEEP_ALIVE_TIMEOUT_MS', 'server.keepAliveTimeoutMs', 'int'],
  ['INTAKE_MAX_CONNECTIONS', 'server.maxConnections', 'int'],
  ['INTAKE_DRAIN_MS', 'server.drainMs', 'int'],
  ['INTAKE_API_TOKEN', 'server.apiToken', 'string'],
  ['INTAKE_ALLOWED_HOSTS', 'server.allowedHosts', 'list'],
  ['INTAKE_STORE', 'store', 'string'],
  ['INTAKE_DEDUP_ID_TTL_MS', 'dedup.idTtlMs', 'int'],
  ['INTAKE_DEDUP_FUZZY_WINDOW_MS', 'dedup.fuzzyWindowMs', 'int'],
  ['INTAKE_DEDUP_FUZZY', 'dedup.fuzzy', 'string'],
  ['INTAKE_DEDUP_MAX_KEYS', 'dedup.maxKeys', 'int'],
  ['INTAKE_DEBOUNCE_WINDOW_MS', 'debounce.windowMs', 'int'],
  ['INTAKE_DEBOUNCE_MAX_MESSAGES', 'debounce.maxMessages', 'int'],
  ['INTAKE_DEBOUNCE_MAX_WAIT_MS', 'debounce.maxWaitMs', 'int'],
  ['INTAKE_DEBOUNCE_MEDIA', 'debounce.media', 'string'],
  ['INTAKE_DEBOUNCE_FLUSH_COMMANDS', 'debounce.flushCommands', 'bool'],
  ['INTAKE_DEBOUNCE_FLUSH_WORDS', 'debounce.flushWords', 'list'],
  ['INTAKE_DEBOUNCE_TYPING_MS', 'debounce.typingMs', 'int'],
  ['INTAKE_DEBOUNCE_MAX_OPEN_BUFFERS', 'debounce.maxOpenBuffers', 'int'],
  ['INTAKE_MEDIA_DIR', 'media.dir', 'string'],
  ['INTAKE_MEDIA_MAX_BYTES', 'media.maxBytes', 'int'],
  ['INTAKE_MEDIA_TIMEOUT_MS', 'media.timeoutMs', 'int'],
  ['INTAKE_MEDIA_RETRIES', 'media.retries', 'int'],
  ['INTAKE_MEDIA_TTL_MS', 'media.ttlMs', 'int'],
  ['INTAKE_MEDIA_SWEEP_INTERVAL_MS', 'media.sweepIntervalMs', 'int'],
  ['INTAKE_MEDIA_ALLOW_HOSTS', 'media.allowHosts', 'list'],
  ['INTAKE_MEDIA_ALLOW_PORTS', 'media.allowPorts', 'intList'],
  ['INTAKE_MEDIA_MAX_PER_MESSAGE', 'media.maxPerMessage', 'int'],
  ['INTAKE_MEDIA_CONCURRENCY', 'media.concurrency', 'int'],
  ['INTAKE_MEDIA_PER_SENDER_CONCURRENCY', 'media.perSenderConcurrency', 'int'],
  ['INTAKE_TURNS_MODE', 'turns.mode', 'string'],
  ['INTAKE_TURNS_MAX_MS', 'turns.maxMs', 'int'],
  ['INTAKE_TURNS_MAX_HELD', 'turns.maxHeld', 'int'],
  ['INTAKE_ACTIVATION_GROUP', 'activation.group', 'string'],
  ['INTAKE_ACTIVATION_PRIVATE', 'activation.private', 'string'],
  ['INTAKE_ACTIVATION_WAKE_WORDS', 'activation.wakeWords', 'list'],
  ['INTAKE_ACTIVATION_REPLY_TO_BOT', 'activation.replyToBot', 'bool'],
  ['INTAKE_ACTIVATION_COMMANDS', 'activation.commands', 'bool'],
  ['INTAKE_CONTEXT_MAX_MESSAGES', 'context.maxMessages', 'int'],
  ['INTAKE_CONTEXT_MAX_AGE_MS', 'context.maxAgeMs', 'int'],
  ['INTAKE_CONTEXT_MAX_CHARS', 'context.maxChars', 'int'],
  ['INTAKE_REVISIONS_ENABLED', 'revisions.enabled', 'bool'],
  ['INTAKE_REVISIONS_MAX_PER_SESSION', 'revisions.maxPerSession', 'int'],
  ['INTAKE_REVISIONS_TTL_MS', 'revisions.ttlMs', 'int'],
  ['INTAKE_TAKEOVER_HOLD_MS', 'takeover.holdMs', 'int'],
  ['INTAKE_TAKEOVER_MAX_MS', 'takeover.maxMs', 'int'],
  ['INTAKE_TAKEOVER_OPERATORS', 'takeover.operators', 'list'],
  ['INTAKE_CORRELATION_CROSS_ADAPTER', 'correlation.crossAdapter', 'bool'],
  ['INTAKE_CORRELATION_MESSAGE_WINDOW_MS', 'correlation.messageWindowMs', 'int'],
  ['INTAKE_CORRELATION_EVENT_WINDOW_MS', 'correlation.eventWindowMs', 'int'],
  ['INTAKE_CORRELATION_MAX_GROUPS', 'correlation.maxGroups', 'int'],
  ['INTAKE_CORRELATION_NOTICE_HOLD_MS', 'correlation.noticeHoldMs', 'int'],
  ['INTAKE_EVENTS_RETENTION_MS', 'events.retentionMs', 'int'],
  ['INTAKE_EVENTS_RETENTION_COUNT', 'events.retentionCount', 'int'],
  ['INTAKE_EVENTS_MAX_STREAMS', 'events.maxStreams', 'int'],
  ['INTAKE_TRACE_RETENTION_MS', 'trace.retentionMs', 'int'],
  ['INTAKE_TRACE_MAX_ENTRIES', 'trace.maxEntries', 'int'],
  ['INTAKE_TRACE_SHARED', 'trace.shared', 'bool'],
  ['INTAKE_REDIS_COMMAND_TIMEOUT_MS', 'redis.commandTimeoutMs', 'int'],
  ['INTAKE_REDIS_WAIT_REPLICAS', 'redis.waitReplicas', 'int'],
  ['INTAKE_REDIS_KEY_PREFIX', 'redis.keyPrefix', 'string'],
  ['INTAKE_REDIS_SHARDS', 'redis.shards', 'int'],
  ['INTAKE_AGENT_URL', 'agent.url', 'string'],
  ['INTAKE_AGENT_SECRET', 'agent.secret', 'string'],
  ['INTAKE_AGENT_TIMEOUT_MS', 'agent.timeoutMs', 'int'],
  ['INTAKE_AGENT_RETRIES', 'agent.retries', 'int'],
  ['INTAKE_AGENT_CONCURRENCY', 'agent.concurrency', 'int'],
  ['INTAKE_AGENT_MAX_PENDING', 'agent.maxPending', 'int'],
  ['INTAKE_AGENT_MIN_BACKOFF_MS', 'agent.minBackoffMs', 'int'],
  ['INTAKE_AGENT_MAX_BACKOFF_MS', 'agent.maxBackoffMs', 'int'],
  ['INTAKE_AGENT_CLAIMS_LEASE_MS', 'agent.claims.leaseMs', 'int'],
  ['INTAKE_AGENT_CLAIMS_MAX_ATTEMPTS', 'agent.claims.maxAttempts', 'int'],
  ['LOG_LEVEL', 'logLevel', 'string'],
];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseEnvValue(name: string, raw: string, kind: EnvKind): Json {
  const fail = (allowed: string): never => {
    throw new ConfigError(`Invalid environment variable ${name}=${JSON.stringify(raw)}: expected ${allowed}`);
  };
  switch (kind) {
    case 'string':
      return raw;
    case 'int':
      return /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : fail('a whole number');
    case 'bool':
      return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : fail('true or false');
    case 'list':
      return raw
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean);
    case 'intList':
      return raw
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean)
        .map((entry) => (/^\d+$/.test(entry) ? Number(entry) : fail('a comma-separated list of whole numbers')));
  }
}

/** Where `${NAME}` is looked up, as an error names it. */
interface Variables {
  env: NodeJS.ProcessEnv;
  /** Ends the message of a name it lacks: the environment, or the library's `env` option. */
  unset: string;
}

/** Replace `${NAME}` in every string of the file with the environment's value; an unset name is an error. */
function expand(value: Json, vars: Variables, path: string): Json {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_match, name: string) => {
      const found = vars.env[name];
      if (found === undefined) throw new ConfigError(`Setting ${path} refers to \${${name}}, which ${vars.unset}`);
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => expand(item, vars, `${path}[${index}]`));
  if (isObject(value)) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) out[key] = expand(item, vars, path ? `${path}.${key}` : key);
    return out;
  }
  return value;
}

function setPath(target: JsonObject, path: string, value: Json): void {
  const keys = path.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (!isObject(next)) node[key] = {};
    node = node[key] as JsonObject;
  }
  node[keys[keys.length - 1] as string] = value;
}

function mergeDefaults(file: JsonObject): JsonObject {
  const base = JSON.parse(JSON.stringify(defaults)) as JsonObject;
  for (const [key, value] of Object.entries(file)) {
    const current = base[key];
    base[key] = isObject(current) && isObject(value) ? { ...current, ...value } : value;
  }
  return base;
}

function readFile(path: string): JsonObject {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(`Cannot read config file ${path} (INTAKE_CONFIG): ${(cause as Error).message}`, { cause });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(`Config file ${path} is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  if (!isObject(parsed)) throw new ConfigError(`Config file ${path} must hold a JSON object`);
  return parsed;
}

/**
 * The environment with a `.env` file in `cwd` (beside `.env.example`) filled in underneath:
 * a variable set in the real environment always wins over the file. No file, no change.
 */
export function withDotEnv(cwd: string, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const path = resolve(cwd, '.env');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return env;
    throw new ConfigError(`Cannot read ${path}: ${(cause as Error).message}`, { cause });
  }
  const merged: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(parseEnv(text)))
    if (value !== undefined && name !== '__proto__') merged[name] = value;
  return Object.assign(merged, env);
}

const schemas = new WeakMap<readonly ChannelKind[], ReturnType<typeof configSchemaFor>>();

/** The config schema of a list of channel kinds, built once per list (tests load configs by the hundred). */
function schemaFor(kinds: readonly ChannelKind[]): ReturnType<typeof configSchemaFor> {
  let schema = schemas.get(kinds);
  if (!schema) schemas.set(kinds, (schema = configSchemaFor(kinds)));
  return schema;
}

export interface LoadOptions {
  /**
   * The environment variables to read (`INTAKE_*`, `HOST`, `PORT`, ..., `INTAKE_CONFIG` and the
   * file's `${NAME}`). A library reads none of its host's unless told: pass `process.env` to
   * read them as `npm start` does. @default {}
   */
  env?: NodeJS.ProcessEnv;
  /** An already-parsed config object used instead of the file (library use and tests). */
  file?: Record<string, unknown>;
  cwd?: string;
  /** The channel kinds a channel may name: the adapter registry (`src/service/configure.ts` passes the built-in one). */
  adapters: readonly ChannelKind[];
}

/**
 * Build the one validated, frozen Config: defaults, then the JSON file, then the environment.
 * Throws ConfigError naming the setting when anything is off.
 */
export function loadConfigWith(options: LoadOptions): Config {
  // The host's environment is not ours to read (a container's HOST=0.0.0.0 would move the
  // listener of a library that never listens): only what the caller hands over.
  const env = options.env ?? {};
  const vars: Variables = {
    env,
    unset: options.env
      ? 'is not set in the environment'
      : 'is not set: the library reads no environment variable unless given one in `env` (e.g. `env: process.env`)',
  };
  const cwd = options.cwd ?? process.cwd();
  let file: JsonObject = {};
  if (options.file) {
    file = expand(options.file as JsonObject, vars, '') as JsonObject;
  } else {
    const explicit = env.INTAKE_CONFIG;
    const path = resolve(cwd, explicit ?? './intake.config.json');
    if (explicit !== undefined || existsSync(path)) file = expand(readFile(path), vars, '') as JsonObject;
  }

  const merged = mergeDefaults(file);
  const source = new Map<string, string>();
  for (const [name, path, kind] of envSettings) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    setPath(merged, path, parseEnvValue(name, raw, kind));
    source.set(path, name);
  }
  if (merged.channels === undefined) merged.channels = [{ id: 'generic', adapter: 'generic' }];
  if (merged.logLevel === undefined) merged.logLevel = 'info';

  const schema = schemaFor(options.adapters);
  const result = schema.safeParse(merged);
  if (!result.success) {
    const lines = result.error.issues
      .flatMap((issue) => describeIssue(issue, schema, source, merged))
      .map((line) => `  - ${line}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const raw = result.data;

  const seen = new Set<string>();
  const channels: ChannelConfig[] = raw.channels.map((channel, index) => {
    if (seen.has(channel.id)) throw new ConfigError(`channels[${index}].id: channel id "${channel.id}" is used twice`);
    seen.add(channel.id);
    // What is left after the common fields is the adapter's parsed settings.
    const {
      id,
      adapter,
      verify,
      namespace,
      dedup,
      debounce,
      media,
      turns,
      forwards,
      activation,
      context,
      access,
      budgets,
      ...rest
    } = channel;
    return Object.freeze({
      id,
      adapter,
      index,
      verify: verify ?? true,
      ...(namespace === undefined ? {} : { namespace }),
      // The exact-id window covers the platform's retries and any replay its signature still
      // lets through: the longest of the global window, the adapter's retry horizon and its
      // replay horizon, unless the channel sets its own.
      dedup: Object.freeze({
        ...raw.dedup,
        idTtlMs: Math.max(
          raw.dedup.idTtlMs,
          horizonOf(options.adapters, adapter),
          replayOf(options.adapters, adapter, rest),
        ),
        ...dedup,
      }),
      debounce: Object.freeze({ ...raw.debounce, ...debounce }),
      media: Object.freeze({ ...raw.media, ...media }),
      turns: Object.freeze({ ...raw.turns, ...turns }),
      forwards: Object.freeze({ ...raw.forwards, ...forwards }),
      ...channelReach(raw, { activation, context, access, budgets }, `channels[${index}].`),
      settings: Object.freeze(rest),
    });
  });

  if (raw.agent.url !== undefined && raw.agent.claims !== undefined) {
    throw new ConfigError(
      'agent.url (INTAKE_AGENT_URL) and agent.claims (INTAKE_AGENT_CLAIMS_*) are both set: outputs are either pushed to the agent or claimed by its workers; remove one',
    );
  }
  if (raw.agent.url !== undefined && raw.agent.secret === undefined) {
    throw new ConfigError(
      'agent.secret (INTAKE_AGENT_SECRET) is required when agent.url is set: the agent must be able to verify what it receives',
    );
  }
  const secretProblem = raw.agent.secret === undefined ? undefined : standardWebhooksSecretProblem(raw.agent.secret);
  if (secretProblem) {
    throw new ConfigError(
      `agent.secret (INTAKE_AGENT_SECRET) must be a Standard Webhooks secret, "whsec_" then the base64 of 24 to 64 random bytes: ${secretProblem}`,
    );
  }
  if (raw.server.headersTimeoutMs > raw.server.requestTimeoutMs) {
    throw new ConfigError(
      `server.headersTimeoutMs (INTAKE_HEADERS_TIMEOUT_MS) ${raw.server.headersTimeoutMs} must not exceed server.requestTimeoutMs (INTAKE_REQUEST_TIMEOUT_MS) ${raw.server.requestTimeoutMs}: the headers are part of the request`,
    );
  }
  if (!isLoopbackHost(raw.server.host) && !raw.server.apiToken) {
    throw new ConfigError(
      `server.apiToken (INTAKE_API_TOKEN) is required when server.host (HOST) is "${raw.server.host}", a non-loopback address: /v1/* and /metrics would be open to the network`,
    );
  }
  return Object.freeze({ ...raw, channels: Object.freeze(channels) });
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** How long a replay of a channel's signed deliveries stays fresh (0 when nothing is signed with a timestamp). */
function replayOf(kinds: readonly ChannelKind[], name: string, settings: Readonly<Record<string, unknown>>): number {
  return kinds.find((kind) => kind.name === name)?.replayHorizonMs?.(settings) ?? 0;
}

/** The retry horizon of the adapter a channel names (0 when unknown: its own rule applies). */
function horizonOf(kinds: readonly ChannelKind[], name: string): number {
  return kinds.find((kind) => kind.name === name)?.retryHorizonMs ?? 0;
}
