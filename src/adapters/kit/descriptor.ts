import type { z } from 'zod';
import type { ChannelConfig } from '../../config/schema.js';
import type { AdapterContext } from './access-token.js';
import type { Adapter } from './types.js';

/** A channel as its adapter sees it: the namespace resolved (the channel's, else the descriptor's, else the channel id). */
export type AdapterChannel = ChannelConfig & { readonly namespace: string };

/** The adapter-specific keys of a channel: a strict zod object, so a misspelt key fails start-up. */
export type SettingsSchema = z.ZodObject<z.ZodRawShape, z.core.$strict>;

/**
 * One platform, declared in one object (STYLE habit 16). The registry lists these; the config
 * schema, the secret-required rule and the shared tests all derive from it.
 */
export interface AdapterDescriptor<Settings extends SettingsSchema = SettingsSchema> {
  /** The channel's `adapter` value and the output's `sourceChannel`. */
  readonly name: string;
  /** Default id space of users and conversations; absent: the channel's own id. */
  readonly namespace?: string;
  /**
   * The setting holding the signing secret. `required`: a channel without it refuses to start
   * unless it says `"verify": false`; otherwise it is simply unsigned.
   */
  readonly secret?: {
    readonly setting: keyof z.output<Settings> & string;
    readonly required: boolean;
    readonly why?: string;
  };
  /** The secret rule when it depends on other settings (OneBot: `accessToken` for a socket, `secret` over HTTP). */
  readonly secretFor?: (settings: Readonly<Record<string, unknown>>) => {
    readonly setting: string;
    readonly required: boolean;
    readonly why?: string;
  };
  readonly settings: Settings;
  /**
   * How long the platform keeps retrying one delivery, in ms, with its source in a comment: a
   * channel's exact-id window (`dedup.idTtlMs`) is at least this unless the channel sets its own.
   */
  readonly retryHorizonMs: number;
  /**
   * How long a captured signed delivery would pass the freshness check, counted from its first
   * arrival: twice the timestamp tolerance (the sender's clock may be ahead or behind by up to
   * it). The exact-id window is at least this too, so a replay inside the tolerance is a
   * duplicate, never a second output. Absent or 0: nothing is signed with a timestamp.
   */
  readonly replayHorizonMs?: (settings: z.output<Settings>) => number;
  /**
   * Build the runtime adapter of one channel from its parsed settings; throws ConfigError.
   * `context` holds what instances share (API access tokens, `access-token.ts`).
   */
  create(channel: AdapterChannel, settings: z.output<Settings>, context: AdapterContext): Adapter;
}

/**
 * Declare an adapter: identity at run time, inference at compile time (so `create` sees its
 * own settings typed while the registry holds plain `AdapterDescriptor`s).
 */
export function defineAdapter<Settings extends SettingsSchema>(
  descriptor: AdapterDescriptor<Settings>,
): AdapterDescriptor {
  return descriptor as unknown as AdapterDescriptor;
}
