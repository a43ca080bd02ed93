import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Running } from '../support/helpers.js';

/** PUT, GET and DELETE of a conversation's activation with hostile keys and bodies, on SQLite and memory. */
describe.each(['sqlite', 'memory'])('the conversations routes on the %s store', (kind) => {
  let service: Running;
  beforeAll(async () => {
    service = await startService({
      ...(kind === 'memory' ? { store: 'memory' } : {}),
      channels: [{ id: 'generic', adapter: 'generic' }],
    });
  });
  afterAll(() => service.stop());

  const url = (key: string, tail = '') => `${service.url}/v1/conversations/${encodeURIComponent(key)}${tail}`;
  const json = { 'content-type': 'application/json' };
  const put = (key: string, body: string) => fetch(url(key, '/activation'), { method: 'PUT', headers: json, body });
  const view = async (key: string) => (await (await fetch(url(key))).json()) as Record<string, unknown>;

  it('keeps an override of 512 characters of emoji, combining marks and right-to-left text under its exact key', async () => {
    const key = `qq:group:${'👩‍👩‍👧'.repeat(40)}${'é'.repeat(40)}${'שלום'.repeat(20)}`.padEnd(512, '\u200b');
    expect(key.length).toBe(512);
    const answer = await put(key, '{"group":"never"}');
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ sessionKey: key, activation: { group: 'never' } });
    expect(await view(key)).toEqual({ sessionKey: key, activation: { group: 'never' }, context: [], dropped: 0 });
    expect((await view(key.slice(0, 511))).activation).toBeNull();
  });

  it('refuses 513 characters, control characters and a lone surrogate half as a session key', async () => {
    expect((await put('k'.repeat(513), '{"group":"never"}')).status).toBe(400);
    expect((await put('qq:group:\u0000', '{"group":"never"}')).status).toBe(400);
    const lone = await fetch(`${service.url}/v1/conversations/qq%3Agroup%3A%ED%A0%80/activation`, {
      method: 'PUT',
      headers: json,
      body: '{"group":"never"}',
    });
    expect(lone.status).toBe(400);
    expect(((await lone.json()) as { error: { code: string } }).error.code).toBe('bad_session_key');
  });

  it.each([
    ['an array', '[]'],
    ['null', 'null'],
    ['a string', '"never"'],
    ['a number', '1'],
    ['an empty object', '{}'],
    ['a __proto__ key', '{"__proto__":{"group":"never"}}'],
    ['a constructor key', '{"constructor":"never","group":"never"}'],
    ['a mode of the wrong case', '{"group":"Never"}'],
    ['no JSON', '{group: never}'],
  ])('refuses %s as the body with a 400 and stores nothing', async (_name, body) => {
    const answer = await put('cli:odd', body);
    expect(answer.status).toBe(400);
    expect((await view('cli:odd')).activation).toBeNull();
  });

  it('takes session keys that are names of Object.prototype as any other', async () => {
    for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect((await put(key, '{"private":"mention"}')).status).toBe(200);
      expect((await view(key)).activation).toEqual({ private: 'mention' });
    }
    expect((await view('valueOf')).activation).toBeNull();
  });

  it('sets an override for a conversation that never existed, and deletes one that was never set', async () => {
    expect((await put('tg:-100999', '{"group":"mention","private":"never"}')).status).toBe(200);
    expect((await view('tg:-100999')).activation).toEqual({ group: 'mention', private: 'never' });
    expect((await fetch(url('tg:-100999', '/activation'), { method: 'DELETE', headers: json })).status).toBe(200);
    expect((await fetch(url('tg:-100998', '/activation'), { method: 'DELETE', headers: json })).status).toBe(200);
    expect(await view('tg:-100999')).toEqual({ sessionKey: 'tg:-100999', activation: null, context: [], dropped: 0 });
  });
});
