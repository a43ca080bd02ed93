import { describe, expect, it } from 'vitest';
import { isIntakeError } from '../../src/core/errors.js';
import type { RawDelivery } from '../../src/events/transport.js';
import { Channels } from '../../src/service/channels.js';
import { loadConfig } from '../../src/service/configure.js';
import { adapterFixtures } from '../fixtures/adapters.js';

/* The configured channels with their real adapters, built from a configuration as the service loads it. */

/** A working channel of `adapter` named `id`, unsigned (verification is the adapters' own tests'). */
const entry = (id: string, adapter: string, extra: Record<string, unknown> = {}) => ({
  id,
  adapter,
  verify: false,
  ...adapterFixtures.get(adapter)?.settings,
  ...extra,
});

const channelsOf = (file: Record<string, unknown>) => new Channels(loadConfig({ env: {}, file }));

const get = (query: Record<string, string> = {}): RawDelivery => ({
  headers: {},
  query: new URLSearchParams(query),
  body: Buffer.alloc(0),
  now: 0,
});

/** What `fn` threw, as the error responder sees it. */
function thrown(fn: () => unknown): { code: string; status: number; message: string } {
  try {
    fn();
  } catch (error) {
    if (isIntakeError(error)) return { code: error.code, status: error.status, message: error.message };
    throw error;
  }
  throw new Error('nothing was thrown');
}

describe('Channels', () => {
  it('finds a configured channel by id, and answers 404 unknown_channel for another, naming it and the setting', () => {
    const channels = channelsOf({ channels: [entry('tg', 'telegram'), entry('cli', 'generic')] });
    expect(channels.ids()).toEqual(['tg', 'cli']);
    expect(channels.has('tg')).toBe(true);
    expect(channels.require('tg').adapter.name).toBe('telegram');
    expect(channels.get('nope')).toBe(undefined);
    expect(thrown(() => channels.require('nope'))).toEqual({
      code: 'unknown_channel',
      status: 404,
      message: 'No channel "nope" is configured (see "channels" in the configuration)',
    });
  });

  it("answers a GET on a webhook URL with the adapter's URL check, and 405 no_handshake on a POST-only channel", () => {
    const channels = channelsOf({ channels: [entry('wa', 'whatsapp'), entry('tg', 'telegram')] });
    expect(
      channels.handshake(
        'wa',
        get({ 'hub.mode': 'subscribe', 'hub.verify_token': 'hub-token', 'hub.challenge': '1158201444' }),
      ),
    ).toMatchObject({ status: 200, body: '1158201444' });
    expect(
      channels.handshake('wa', get({ 'hub.mode': 'subscribe', 'hub.verify_token': 'wrong', 'hub.challenge': '1' })),
    ).toMatchObject({ status: 403 });
    expect(thrown(() => channels.handshake('tg', get()))).toEqual({
      code: 'no_handshake',
      status: 405,
      message: 'Channel "tg" (telegram) takes POST only',
    });
    expect(thrown(() => channels.handshake('nope', get())).code).toBe('unknown_channel');
  });

  it("takes JSON bodies on a channel unless its adapter reads another format (WeCom's XML), and JSON for an unknown id", () => {
    const channels = channelsOf({ channels: [entry('wc', 'wecom'), entry('cli', 'generic')] });
    expect(channels.bodyTypes('cli')).toMatchObject({ names: 'application/json' });
    expect(channels.bodyTypes('cli').accepts('application/json; charset=utf-8')).toBe(true);
    expect(channels.bodyTypes('cli').accepts('text/xml')).toBe(false);
    expect(channels.bodyTypes('wc').accepts('text/xml')).toBe(true);
    expect(channels.bodyTypes('wc').names).not.toBe('application/json');
    expect(channels.bodyTypes('nope').names).toBe('application/json');
  });

  it("resolves a channel's debounce and turns over the global ones, and gives the global ones for an unknown id", () => {
    const channels = channelsOf({
      debounce: { windowMs: 1000, maxWaitMs: 5000 },
      turns: { mode: 'off' },
      channels: [
        entry('own', 'generic', { debounce: { windowMs: 200 }, turns: { mode: 'collect' } }),
        entry('plain', 'generic'),
      ],
    });
    expect(channels.debounceOf('own')).toMatchObject({ windowMs: 200, maxWaitMs: 5000 });
    expect(channels.debounceOf('plain')).toMatchObject({ windowMs: 1000, maxWaitMs: 5000 });
    expect(channels.debounceOf('nope')).toMatchObject({ windowMs: 1000, maxWaitMs: 5000 });
    expect(channels.turnsOf('own').mode).toBe('collect');
    expect(channels.turnsOf('plain').mode).toBe('off');
    expect(channels.turnsOf('nope').mode).toBe('off');
    expect(channels.debounceRules().map((rule) => rule.windowMs)).toEqual([1000, 200, 1000]);
  });

  it('keeps agent turns when the global setting or any one channel does, and not when none does', () => {
    expect(channelsOf({ channels: [entry('a', 'generic'), entry('b', 'generic')] }).turnsOn()).toBe(false);
    expect(channelsOf({ turns: { mode: 'steer' }, channels: [entry('a', 'generic')] }).turnsOn()).toBe(true);
    expect(
      channelsOf({
        channels: [entry('a', 'generic'), entry('b', 'generic', { turns: { mode: 'followup' } })],
      }).turnsOn(),
    ).toBe(true);
  });

  it('correlates deliveries only in a namespace several channels serve, or one channel of several bots', () => {
    const namespaces = (...channels: Array<ReturnType<typeof entry>>) => [
      ...channelsOf({ channels }).correlatedNamespaces(),
    ];
    // One bot account per channel, each in a namespace of its own: nothing to correlate.
    expect(
      namespaces(entry('tg', 'telegram'), entry('sl', 'slack'), entry('cli', 'generic'), entry('cli2', 'generic')),
    ).toEqual([]);
    // Two Telegram bots in one group see the same message.
    expect(namespaces(entry('tg1', 'telegram'), entry('tg2', 'telegram'))).toEqual(['tg']);
    // OneBot over HTTP carries every bot that posts to it; a forward socket dials one bot.
    expect(namespaces(entry('qq', 'onebot'))).toEqual(['qq']);
    expect(namespaces(entry('qq', 'onebot', { transport: 'ws', url: 'ws://127.0.0.1:1/' }))).toEqual([]);
    // A channel's own namespace puts it beside another platform's channel.
    expect(namespaces(entry('tg', 'telegram'), entry('cli', 'generic', { namespace: 'tg' }))).toEqual(['tg']);
    // A Satori server carries several logins, each platform in the namespace it is mapped to.
    const satori = entry('sat', 'satori', { url: 'http://127.0.0.1:1', namespaces: { onebot: 'qq', discord: 'dc' } });
    expect(namespaces(satori).sort()).toEqual(['dc', 'qq', 'satori']);
  });
});
