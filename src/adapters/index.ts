import type { AdapterName, ChannelConfig } from '../config/schema.js';
import { genericAdapter } from './generic.js';
import { lineAdapter } from './line.js';
import { onebotAdapter } from './onebot.js';
import { slackAdapter } from './slack.js';
import { telegramAdapter } from './telegram.js';
import { whatsappAdapter } from './whatsapp.js';
import type { Adapter, AdapterFactory } from './types.js';

export type { Adapter, Normalized, RawDelivery, PlatformReply } from './types.js';

const factories: Record<AdapterName, AdapterFactory> = {
  generic: genericAdapter,
  onebot: onebotAdapter,
  whatsapp: whatsappAdapter,
  telegram: telegramAdapter,
  slack: slackAdapter,
  line: lineAdapter,
};

/** Build the adapter of a configured channel; fails start-up on a missing or bad setting. */
export function createAdapter(channel: ChannelConfig): Adapter {
  return factories[channel.adapter](channel);
}
