import type { AdapterName, ChannelConfig } from '../config/schema.js';
import { ConfigError } from '../errors.js';
import { genericAdapter } from './generic.js';
import { onebotAdapter } from './onebot.js';
import type { Adapter, AdapterFactory } from './types.js';

export type { Adapter, Normalized, RawDelivery, PlatformReply, ResolvedMedia } from './types.js';

const factories: Partial<Record<AdapterName, AdapterFactory>> = {
  generic: genericAdapter,
  onebot: onebotAdapter,
};

/** Build the adapter of a configured channel; fails start-up on a missing or bad setting. */
export function createAdapter(channel: ChannelConfig): Adapter {
  const factory = factories[channel.adapter];
  if (!factory) throw new ConfigError(`channels[${channel.index}].adapter: "${channel.adapter}" is not available in this version`);
  return factory(channel);
}
