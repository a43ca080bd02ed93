import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { withDotEnv } from '../../src/config/load.js';
import { tempDir } from '../support/helpers.js';

const secretOf = (bytes: number) => 'whsec_' + Buffer.alloc(bytes, 7).toString('base64');

describe('server limits in the config', () => {
  it('defaults to short socket timeouts, a connection cap and a key cap', () => {
    const config = loadConfig({ env: {}, cwd: tempDir().path });
    expect(config.server).toMatchObject({
      maxKeys: 10000,
      headersTimeoutMs: 10000,
      requestTimeoutMs: 30000,
      keepAliveTimeoutMs: 5000,
      maxConnections: 1000,
    });
  });

  it('reads each limit from its environment variable', () => {
    const config = loadConfig({
      env: {
        INTAKE_MAX_KEYS: '50',
        INTAKE_HEADERS_TIMEOUT_MS: '200',
        INTAKE_REQUEST_TIMEOUT_MS: '400',
        INTAKE_KEEP_ALIVE_TIMEOUT_MS: '65000',
        INTAKE_MAX_CONNECTIONS: '3',
        INTAKE_EVENTS_MAX_STREAMS: '3',
      },
      cwd: tempDir().path,
    });
    expect(config.server).toMatchObject({
      maxKeys: 50,
      headersTimeoutMs: 200,
      requestTimeoutMs: 400,
      keepAliveTimeoutMs: 65000,
      maxConnections: 3,
    });
  });

  it('refuses a headers timeout longer than the request timeout, naming both', () => {
    expect(() =>
      loadConfig({
        env: { INTAKE_HEADERS_TIMEOUT_MS: '5000', INTAKE_REQUEST_TIMEOUT_MS: '1000' },
        cwd: tempDir().path,
      }),
    ).toThrow(/server\.headersTimeoutMs \(INTAKE_HEADERS_TIMEOUT_MS\).*server\.requestTimeoutMs/);
    expect(() => loadConfig({ env: { INTAKE_MAX_CONNECTIONS: '0' }, cwd: tempDir().path })).toThrow(
      /server\.maxConnections \(from INTAKE_MAX_CONNECTIONS\)/,
    );
  });
});

describe('limits that depend on each other', () => {
  it('refuses more event streams than connections, naming both settings', () => {
    expect(() =>
      loadConfig({ env: { INTAKE_EVENTS_MAX_STREAMS: '50', INTAKE_MAX_CONNECTIONS: '20' }, cwd: tempDir().path }),
    ).toThrow(
      /events\.maxStreams \(from INTAKE_EVENTS_MAX_STREAMS\): 50 is more than server\.maxConnections \(INTAKE_MAX_CONNECTIONS\) 20/,
    );
    expect(() => loadConfig({ env: {}, file: { events: { maxStreams: 1001 } }, cwd: tempDir().path })).toThrow(
      /events\.maxStreams: 1001 is more than server\.maxConnections/,
    );
    expect(
      loadConfig({ env: { INTAKE_EVENTS_MAX_STREAMS: '20', INTAKE_MAX_CONNECTIONS: '20' }, cwd: tempDir().path }).events
        .maxStreams,
    ).toBe(20);
  });

  it('takes debounce.maxOpenBuffers globally and refuses it on a channel, where it means nothing', () => {
    expect(
      loadConfig({ env: { INTAKE_DEBOUNCE_MAX_OPEN_BUFFERS: '10' }, cwd: tempDir().path }).debounce.maxOpenBuffers,
    ).toBe(10);
    expect(() =>
      loadConfig({
        env: {},
        file: { channels: [{ id: 'g', adapter: 'generic', debounce: { maxOpenBuffers: 5 } }] },
        cwd: tempDir().path,
      }),
    ).toThrow(/channels\[0\]\.debounce\.maxOpenBuffers/);
  });

  it('reads server.allowedHosts from INTAKE_ALLOWED_HOSTS and refuses what is not a host name', () => {
    expect(
      loadConfig({ env: { INTAKE_ALLOWED_HOSTS: 'intake.example.com, [::1]:8787,*' }, cwd: tempDir().path }).server
        .allowedHosts,
    ).toEqual(['intake.example.com', '[::1]:8787', '*']);
    expect(() =>
      loadConfig({ env: { INTAKE_ALLOWED_HOSTS: 'http://intake.example.com/' }, cwd: tempDir().path }),
    ).toThrow(/server\.allowedHosts\[0\]: a host name or host:port as browsers send it in Host \(no scheme, no path\)/);
  });
});

describe('agent.secret', () => {
  const load = (secret: string) =>
    loadConfig({ env: {}, file: { agent: { url: 'http://127.0.0.1:9000/inbox', secret } } });

  it('refuses a secret that decodes to fewer than 24 bytes, naming the setting and its variable', () => {
    for (const bytes of [0, 1, 5, 23]) {
      expect(() => load(bytes === 0 ? 'whsec_' : secretOf(bytes))).toThrow(
        /agent\.secret \(INTAKE_AGENT_SECRET\) must be a Standard Webhooks secret/,
      );
    }
    expect(() => load(secretOf(5))).toThrow(/decodes to 5 bytes/);
  });

  it('refuses a secret over 64 bytes or without the whsec_ prefix, and never echoes it', () => {
    expect(() => load(secretOf(65))).toThrow(/decodes to 65 bytes/);
    const bare = Buffer.alloc(32, 1).toString('base64');
    expect(() => load(bare)).toThrow(/must start with "whsec_"/);
    try {
      load(bare);
    } catch (error) {
      expect((error as Error).message).not.toContain(bare);
    }
  });

  it('accepts 24 to 64 bytes', () => {
    for (const bytes of [24, 32, 64]) expect(load(secretOf(bytes)).agent.secret).toBe(secretOf(bytes));
  });
});

describe('a .env file', () => {
  it('fills in variables the environment does not set; the environment wins', () => {
    const dir = tempDir();
    writeFileSync(
      join(dir.path, '.env'),
      '# local settings\nPORT=9300\nINTAKE_DEBOUNCE_WINDOW_MS=250\nLOG_LEVEL="debug"\n',
    );
    const env = withDotEnv(dir.path, { PORT: '9400' });
    expect(env).toMatchObject({ PORT: '9400', INTAKE_DEBOUNCE_WINDOW_MS: '250', LOG_LEVEL: 'debug' });
    const config = loadConfig({ env, cwd: dir.path });
    expect(config.server.port).toBe(9400);
    expect(config.debounce.windowMs).toBe(250);
    expect(config.logLevel).toBe('debug');
  });

  it('changes nothing when there is no .env', () => {
    const env = { PORT: '1' };
    expect(withDotEnv(tempDir().path, env)).toBe(env);
  });
});
