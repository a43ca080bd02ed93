import { missingSecret, secretRuleOf, settingsOf, type ChannelConfig } from '../config/schema.js';
import { ConfigError } from '../core/errors.js';
import { localContext, type AdapterContext } from './kit/access-token.js';
import type { AdapterDescriptor } from './kit/descriptor.js';
import { dingtalk } from './dingtalk/descriptor.js';
import { discord } from './discord/descriptor.js';
import { feishu } from './feishu/descriptor.js';
import { generic } from './generic/descriptor.js';
import { kook } from './kook/descriptor.js';
import { googlechat } from './googlechat/descriptor.js';
import { line } from './line/descriptor.js';
import { milky } from './milky/descriptor.js';
import { onebot } from './onebot/descriptor.js';
import { qqbot } from './qqbot/descriptor.js';
import { satori } from './satori/descriptor.js';
import { slack } from './slack/descriptor.js';
import { teams } from './teams/descriptor.js';
import { telegram } from './telegram/descriptor.js';
import { wechat } from './wechat/descriptor.js';
import { wecom } from './wecom/descriptor.js';
import { matrix } from './matrix/descriptor.js';
import { whatsapp } from './whatsapp/descriptor.js';
import type { Adapter } from './kit/types.js';

export type { Adapter, Normalized, RawDelivery, PlatformReply } from './kit/types.js';
export type { AdapterDescriptor } from './kit/descriptor.js';

/**
 * The registry: every platform, one line each. The channel config schema
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
  kook,
  matrix,
  milky,
  googlechat,
  teams,
  satori,
];

/**
 * Build the adapter of a configured channel from its descriptor. The settings are parsed
 * again by the descriptor's schema (a no-op for a channel from loadConfig), so a hand-made
 * ChannelConfig is held to the same rules and `create` gets them typed.
 */
export function createAdapter(
  channel: ChannelConfig,
  registry: readonly AdapterDescriptor[] = adapters,
  context: AdapterContext = localContext(),
): Adapter {
  const descriptor = registry.find((candidate) => candidate.name === channel.adapter);
  const where = `channels[${channel.index}]`;
  if (!descriptor) {
    throw new ConfigError(
      `${where}.adapter (channel "${channel.id}"): must be one of ${registry.map((d) => JSON.stringify(d.name)).join(', ')}`,
      { channel: channel.id },
    );
  }
  const parsed = descriptor.settings.safeParse(channel.settings);
  const issue = parsed.error?.issues[0];
  if (!parsed.success || issue) {
    const key = issue?.code === 'unrecognized_keys' ? issue.keys[0] : issue?.path.join('.');
    const problem = issue?.code === 'unrecognized_keys' ? `unknown setting; ${settingsOf(descriptor)}` : issue?.message;
    throw new ConfigError(`${where}.${key ?? '?'} (channel "${channel.id}"): ${problem}`, { channel: channel.id });
  }
  const problem = missingSecret(descriptor, channel.verify, parsed.data);
  if (problem)
    throw new ConfigError(
      `${where}.${secretRuleOf(descriptor, parsed.data)?.setting} (channel "${channel.id}"): ${problem}`,
      { channel: channel.id },
    );
  return descriptor.create(
    { ...channel, namespace: channel.namespace ?? descriptor.namespace ?? channel.id },
    parsed.data,
    context,
  );
}
