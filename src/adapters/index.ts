import { missingSecret, secretRuleOf, settingsOf, type ChannelConfig } from '../config/schema.js';
import { ConfigError } from '../errors.js';
import { localContext, type AdapterContext } from './access-token.js';
import type { AdapterDescriptor } from './descriptor.js';
import { dingtalk } from './dingtalk.js';
import { discord } from './discord.js';
import { feishu } from './feishu.js';
import { generic } from './generic.js';
import { line } from './line.js';
import { onebot } from './onebot.js';
import { qqbot } from './qqbot.js';
import { slack } from './slack.js';
import { telegram } from './telegram.js';
import { wechat } from './wechat.js';
import { wecom } from './wecom.js';
import { whatsapp } from './whatsapp.js';
import type { Adapter } from './types.js';

export type { Adapter, Normalized, RawDelivery, PlatformReply } from './types.js';
export type { AdapterDescriptor } from './descriptor.js';

/**
 * The registry: every platform, one line each. `adapterNames`, the channel config schema
 * (src/config/load.ts), the secret rule and the shared adapter tests all read this list.
 */
export const adapters: readonly AdapterDescriptor[] = [
  generic,
  whatsapp,
  telegram,
  slack,
  line,
  onebot,
  qqbot,
  dingtalk,
  wechat,
  wecom,
  feishu,
  discord,
];

/** The names a channel's `adapter` may take. */
export const adapterNames: readonly string[] = adapters.map((descriptor) => descriptor.name);

/**
 * Build the adapter of a configured channel from its descriptor. The settings are parsed
 * again by the descriptor's schema (a no-op for a channel from loadConfig), so a hand-made
 * ChannelConfig is held to the same rules and `create` gets them typed.
 */
export function createAdapter(channel: ChannelConfig, registry: readonly AdapterDescriptor[] = adapters, context: AdapterContext = localContext()): Adapter {
  const descriptor = registry.find((candidate) => candidate.name === channel.adapter);
  const where = `channels[${channel.index}]`;
  if (!descriptor) {
    throw new ConfigError(`${where}.adapter (channel "${channel.id}"): must be one of ${registry.map((d) => JSON.stringify(d.name)).join(', ')}`, { channel: channel.id });
  }
  const parsed = descriptor.settings.safeParse(channel.settings);
  const issue = parsed.error?.issues[0];
  if (!parsed.success || issue) {
    const key = issue?.code === 'unrecognized_keys' ? issue.keys[0] : issue?.path.join('.');
    const problem = issue?.code === 'unrecognized_keys' ? `unknown setting; ${settingsOf(descriptor)}` : issue?.message;
    throw new ConfigError(`${where}.${key ?? '?'} (channel "${channel.id}"): ${problem}`, { channel: channel.id });
  }
  const problem = missingSecret(descriptor, channel.verify, parsed.data);
  if (problem) throw new ConfigError(`${where}.${secretRuleOf(descriptor, parsed.data)?.setting} (channel "${channel.id}"): ${problem}`, { channel: channel.id });
  return descriptor.create({ ...channel, namespace: channel.namespace ?? descriptor.namespace ?? channel.id }, parsed.data, context);
}
