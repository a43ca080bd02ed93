import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { adapters, createAdapter } from '../../src/adapters/index.js';
import { closest, editDistance } from '../../src/config/issues.js';
import { defaultTypingMs } from '../../src/service/admission.js';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake } from '../../src/service/intake.js';
import { adapterFixtures } from '../fixtures/adapters.js';
import { tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';

describe('loadConfig', () => {
  it('gives the contract defaults and the generic channel with no file and no environment', () => {
    const config = loadConfig({ env: {}, cwd: tempDir().path });
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 8787, bodyLimitBytes: 1048576 });
    expect(config.store).toBe('sqlite:./data/intake.db');
    expect(config.dedup).toMatchObject({ idTtlMs: 300000, fuzzyWindowMs: 2000, fuzzy: 'no-id' });
    expect(config.debounce).toEqual({
      windowMs: 1500,
      maxMessages: 10,
      maxWaitMs: 7500,
      media: 'all',
      flushCommands: true,
      maxOpenBuffers: 50000,
    });
    expect(config.media).toMatchObject({
      dir: './media',
      maxBytes: 20971520,
      timeoutMs: 30000,
      retries: 3,
      ttlMs: 604800000,
    });
    expect(config.channels.map((c) => [c.id, c.adapter])).toEqual([['generic', 'generic']]);
  });

  it('reads ./intake.config.json, expands ${NAME}, and lets the environment win', () => {
    const dir = tempDir();
    writeFileSync(
      join(dir.path, 'intake.config.json'),
      JSON.stringify({
        server: { port: 9000, apiToken: '${TOKEN}' },
        debounce: { windowMs: 100 },
        channels: [{ id: 'cli', adapter: 'generic', secret: '${SECRET}', debounce: { maxMessages: 9 } }],
      }),
    );
    const config = loadConfig({ env: { TOKEN: 't0k', SECRET: 'c2VjcmV0', PORT: '9100' }, cwd: dir.path });
    expect(config.server.port).toBe(9100);
    expect(config.server.apiToken).toBe('t0k');
    const channel = config.channels[0]!;
    expect(channel.settings.secret).toBe('c2VjcmV0');
    expect(channel.debounce).toMatchObject({ windowMs: 100, maxMessages: 9, maxWaitMs: 7500 });
  });

  it('resolves agent turns globally and per channel, and names a bad turns setting', () => {
    const config = loadConfig({
      env: { INTAKE_TURNS_MAX_MS: '60000' },
      file: {
        turns: { mode: 'collect' },
        channels: [
          { id: 'g', adapter: 'generic' },
          { id: 'v', adapter: 'generic', turns: { mode: 'interrupt', maxHeld: 5 } },
        ],
      },
    });
    expect(config.turns).toEqual({ mode: 'collect', maxMs: 60_000, maxHeld: 20 });
    expect(config.channels.map((channel) => channel.turns)).toEqual([
      { mode: 'collect', maxMs: 60_000, maxHeld: 20 },
      { mode: 'interrupt', maxMs: 60_000, maxHeld: 5 },
    ]);
    expect(() => loadConfig({ env: { INTAKE_TURNS_MODE: 'queue' } })).toThrow(
      /turns\.mode \(from INTAKE_TURNS_MODE\).*"collect"/s,
    );
    expect(() => loadConfig({ env: {}, file: { turns: { maxHeld: 0 } } })).toThrow(/turns\.maxHeld/);
    expect(() => loadConfig({ env: {}, file: { turns: { mode: 'off', queue: true } } })).toThrow(/turns/);
    expect(() =>
      loadConfig({ env: {}, file: { channels: [{ id: 'g', adapter: 'generic', turns: { mode: 'rollback' } }] } }),
    ).toThrow(/channels\[0\]\.turns\.mode/);
  });

  it('names the setting and what is allowed when a value is bad', () => {
    expect(() => loadConfig({ env: { INTAKE_DEDUP_FUZZY: 'sometimes' }, cwd: tempDir().path })).toThrow(
      /dedup\.fuzzy \(from INTAKE_DEDUP_FUZZY\).*"no-id"/s,
    );
    expect(() => loadConfig({ env: { PORT: 'eighty' }, cwd: tempDir().path })).toThrow(
      /PORT="eighty": expected a whole number/,
    );
    expect(() => loadConfig({ env: {}, file: { debounce: { windowMs: -1 } } })).toThrow(/debounce\.windowMs/);
    expect(() => loadConfig({ env: {}, file: { channels: [{ id: 'a b', adapter: 'generic' }] } })).toThrow(
      /channels\[0\]\.id/,
    );
    expect(() => loadConfig({ env: {}, file: { channels: [{ id: 'x', adapter: 'icq' }] } })).toThrow(
      /channels\[0\]\.adapter/,
    );
    expect(() => loadConfig({ env: {}, file: { store: 'postgres://x' } })).toThrow(/store.*"memory"/);
    expect(() => loadConfig({ env: { INTAKE_REDIS_SHARDS: '0' } })).toThrow(
      /redis\.shards \(from INTAKE_REDIS_SHARDS\)/,
    );
    expect(
      loadConfig({ env: { INTAKE_STORE: 'redis-cluster://10.0.0.1:7000,10.0.0.2:7000', INTAKE_REDIS_SHARDS: '6' } })
        .redis.shards,
    ).toBe(6);
    expect(() => loadConfig({ env: {}, file: { unknownKey: 1 } })).toThrow(/unknownKey/);
  });

  it('reads debounce.typingMs from the environment, globally and per channel, and refuses a negative one', () => {
    expect(loadConfig({ env: {}, cwd: tempDir().path }).debounce.typingMs).toBeUndefined();
    expect(defaultTypingMs).toBe(3000);
    const config = loadConfig({
      env: { INTAKE_DEBOUNCE_TYPING_MS: '0' },
      file: { channels: [{ id: 'g', adapter: 'generic', debounce: { typingMs: 2000 } }] },
      cwd: tempDir().path,
    });
    expect(config.debounce.typingMs).toBe(0);
    expect(config.channels[0]!.debounce).toMatchObject({ typingMs: 2000, windowMs: 1500 });
    expect(() => loadConfig({ env: { INTAKE_DEBOUNCE_TYPING_MS: '-1' }, cwd: tempDir().path })).toThrow(
      /debounce\.typingMs/,
    );
  });

  it('fails on a ${NAME} that the environment does not set', () => {
    expect(() => loadConfig({ env: {}, file: { server: { apiToken: '${NOPE}' } } })).toThrow(
      /server\.apiToken refers to \$\{NOPE\}/,
    );
  });

  it('refuses a non-loopback host without an API token', () => {
    expect(() => loadConfig({ env: { HOST: '0.0.0.0' }, cwd: tempDir().path })).toThrow(
      /server\.apiToken \(INTAKE_API_TOKEN\) is required/,
    );
    expect(loadConfig({ env: { HOST: '0.0.0.0', INTAKE_API_TOKEN: 'x' }, cwd: tempDir().path }).server.host).toBe(
      '0.0.0.0',
    );
  });

  it('fails when INTAKE_CONFIG names a missing file', () => {
    expect(() => loadConfig({ env: { INTAKE_CONFIG: '/nonexistent/x.json' } })).toThrow(/Cannot read config file/);
  });
});

describe('an unknown setting', () => {
  it('names the setting a misspelt top-level key was likely meant to be', () => {
    expect(() => loadConfig({ env: {}, file: { chanels: [{ id: 'g', adapter: 'generic' }] } })).toThrow(
      'Invalid configuration:\n  - unknown setting "chanels": did you mean "channels"?',
    );
    expect(() => loadConfig({ env: {}, file: { LogLevel: 'debug' } })).toThrow(
      'unknown setting "LogLevel": did you mean "logLevel"?',
    );
  });

  it('names the nested setting it was likely meant to be, in a channel too', () => {
    expect(() => loadConfig({ env: {}, file: { debounce: { windowMS: 500 } } })).toThrow(
      'unknown setting "debounce.windowMS": did you mean "debounce.windowMs"?',
    );
    expect(() => loadConfig({ env: {}, file: { server: { hots: '127.0.0.1' } } })).toThrow(
      'unknown setting "server.hots": did you mean "server.host"?',
    );
    expect(() =>
      loadConfig({ env: {}, file: { channels: [{ id: 'g', adapter: 'generic', debounce: { maxMesages: 5 } }] } }),
    ).toThrow(
      'unknown setting "channels[0].debounce.maxMesages" (channel "g"): did you mean "channels[0].debounce.maxMessages"?',
    );
  });

  it('lists the settings there when none is close', () => {
    expect(() => loadConfig({ env: {}, file: { unknownKey: 1 } })).toThrow(
      'unknown setting "unknownKey"; the settings are server, store, dedup, debounce, media, turns, forwards, correlation, events, trace, redis, agent, logLevel, activation, context, access, budgets, revisions, takeover, channels',
    );
    expect(() => loadConfig({ env: {}, file: { redis: { cluster: true } } })).toThrow(
      'unknown setting "redis.cluster"; redis takes commandTimeoutMs, waitReplicas, keyPrefix, shards',
    );
  });

  it('counts a swap of two neighbouring letters as one edit', () => {
    expect([
      editDistance('chanels', 'channels'),
      editDistance('hots', 'host'),
      editDistance('', 'abc'),
      editDistance('store', 'store'),
    ]).toEqual([1, 1, 3, 0]);
    expect(closest('stroe', ['server', 'store'])).toBe('store');
    expect(closest('queue', ['server', 'store'])).toBe(undefined);
  });
});

describe('channel settings, from the adapter registry', () => {
  // With the other settings of a working channel (an adapter may require more than its secret).
  it.each(
    adapters
      .filter((d) => d.secret?.required)
      .map(
        (d) =>
          [
            d.name,
            d.secret!.setting,
            adapterFixtures.get(d.name)?.settings ?? {},
            d.secret!.why ?? 'verifies signatures',
          ] as const,
      ),
  )('refuses to start a %s channel without its %s unless verify is false', (adapter, setting, settings, why) => {
    expect(() => loadConfig({ env: {}, file: { channels: [{ id: 'x', adapter, ...settings }] } })).toThrow(
      new RegExp(`channels\\[0\\]\\.${setting} \\(channel "x"\\): is required: the ${adapter} adapter ${why}`),
    );
    const [open] = loadConfig({
      env: {},
      file: { channels: [{ id: 'x', adapter, ...settings, verify: false }] },
    }).channels;
    expect(() => createAdapter(open!)).not.toThrow();
  });

  it('names a misspelt setting, its channel, and the settings the adapter takes', () => {
    const file = {
      channels: [
        { id: 'generic', adapter: 'generic' },
        { id: 'wa', adapter: 'whatsapp', apSecret: 's', verify: false },
      ],
    };
    expect(() => loadConfig({ env: {}, file })).toThrow(
      'channels[1].apSecret (channel "wa"): unknown setting; the whatsapp adapter takes appSecret, verifyToken, accessToken, graphBaseUrl',
    );
  });

  it('names an unknown adapter and lists the registered ones', () => {
    expect(() => loadConfig({ env: {}, file: { channels: [{ id: 'x', adapter: 'icq' }] } })).toThrow(
      `channels[0].adapter (channel "x"): must be one of ${adapters.map((d) => JSON.stringify(d.name)).join(', ')}`,
    );
  });

  it('checks the type of a setting and passes it to the adapter parsed', () => {
    expect(() =>
      loadConfig({ env: {}, file: { channels: [{ id: 'tg', adapter: 'telegram', secretToken: 5 }] } }),
    ).toThrow('channels[0].secretToken (channel "tg"): must be a string');
    expect(() =>
      loadConfig({ env: {}, file: { channels: [{ id: 'tg', adapter: 'telegram', secretToken: 'has space' }] } }),
    ).toThrow(
      'channels[0].secretToken (channel "tg"): must be 1-256 characters of A-Z, a-z, 0-9, _ and -, as setWebhook requires',
    );
    const [channel] = loadConfig({
      env: {},
      file: { channels: [{ id: 'qq', adapter: 'onebot', secret: '', verify: false, botIds: [10001, '10002'] }] },
    }).channels;
    expect(channel!.settings).toEqual({
      transport: 'http',
      actionTimeoutMs: 10_000,
      leaseMs: 15_000,
      reconnectMinMs: 1000,
      reconnectMaxMs: 30_000,
      secret: undefined,
      botIds: ['10001', '10002'],
    });
  });
});

describe('regression: the library reads no environment unless given env', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('starts createIntake with HOST=0.0.0.0 in the process environment and no env option, on its own defaults', async () => {
    vi.stubEnv('HOST', '0.0.0.0');
    vi.stubEnv('INTAKE_DEBOUNCE_WINDOW_MS', 'soon');
    const dir = tempDir();
    const intake = await createIntake({
      configFile: { store: 'memory', media: { dir: join(dir.path, 'media') } },
      cwd: dir.path,
      logger: silent,
    });
    try {
      expect(intake.config.server.host).toBe('127.0.0.1');
      expect(intake.config.debounce.windowMs).toBe(1500);
    } finally {
      await intake.close();
    }
  });

  it('reads the variables of the env it is given', () => {
    expect(loadConfig({ env: { PORT: '9100' }, cwd: tempDir().path }).server.port).toBe(9100);
  });

  it('says how to hand the environment over when the file refers to a variable it was not given', () => {
    vi.stubEnv('TOKEN', 't0k');
    expect(() => loadConfig({ file: { server: { apiToken: '${TOKEN}' } } })).toThrow(
      'Setting server.apiToken refers to ${TOKEN}, which is not set: the library reads no environment variable unless given one in `env` (e.g. `env: process.env`)',
    );
  });
});

describe('regression: an exact-id window shorter than a signature stays fresh', () => {
  const channel = (adapter: string, extra: Record<string, unknown> = {}) => ({
    id: adapter,
    adapter,
    ...adapterFixtures.get(adapter)!.settings,
    ...extra,
  });
  const windowOf = (entry: Record<string, unknown>): number =>
    loadConfig({ env: {}, cwd: tempDir().path, file: { channels: [entry] } }).channels[0]!.dedup.idTtlMs;

  it("keeps a signed channel's ids twice its timestamp tolerance, so a replay inside it is a duplicate", () => {
    // A sender whose clock runs ahead by up to the tolerance signs a delivery that still passes
    // that long after its id would have left a window of the tolerance alone.
    expect(windowOf(channel('wechat', { token: 't' }))).toBe(600_000);
    expect(windowOf(channel('wechat', { token: 't', timestampToleranceSec: 900 }))).toBe(1_800_000);
    expect(windowOf(channel('wecom', { token: 't' }))).toBe(600_000);
    expect(windowOf(channel('dingtalk', { appSecret: 's' }))).toBe(7_200_000);
    expect(windowOf(channel('generic', { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }))).toBe(600_000);
  });

  it("leaves unsigned channels and a channel's own window as they were", () => {
    expect(windowOf(channel('generic'))).toBe(300_000);
    expect(windowOf(channel('wechat', { token: 't', timestampToleranceSec: 0 }))).toBe(300_000);
    expect(windowOf(channel('wechat', { token: 't', dedup: { idTtlMs: 60_000 } }))).toBe(60_000);
  });
});

describe('debounce.flushWords from the environment', () => {
  it('reads a comma-separated list, and refuses a word past 64 characters naming the setting', () => {
    const config = loadConfig({ env: { INTAKE_DEBOUNCE_FLUSH_WORDS: 'stop, 停 ,等等' }, cwd: tempDir().path });
    expect(config.debounce.flushWords).toEqual(['stop', '停', '等等']);
    expect(() => loadConfig({ env: { INTAKE_DEBOUNCE_FLUSH_WORDS: 'x'.repeat(65) }, cwd: tempDir().path })).toThrow(
      /debounce\.flushWords/,
    );
  });
});
