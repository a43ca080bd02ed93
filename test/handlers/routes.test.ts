import { describe, expect, it } from 'vitest';
import { Handlers, routesOf } from '../../src/handlers/routes.js';
import type { InboundEvent } from '../../src/events/inbound.js';

const event = (kind: InboundEvent['kind'], detail?: string, type: 'group' | 'private' = 'group'): InboundEvent => ({
  id: 'e',
  kind,
  ...(detail ? { detail } : {}),
  channel: 'c',
  adapter: 'onebot',
  namespace: 'qq',
  conversation: { type, id: '1' },
  sessionKey: 'qq:group:1',
  sender: { id: 'u' },
  segments: [],
  text: '',
  media: [],
  mentions: [],
  timestamp: 0,
  raw: undefined,
});

describe('Handlers', () => {
  it('derives routes from kind, conversation and detail', () => {
    expect(routesOf(event('message', 'group'))).toEqual(['message', 'message.group']);
    expect(routesOf(event('notice', 'group_increase'))).toEqual(['notice', 'notice.group', 'notice.group_increase']);
    expect(routesOf(event('request', 'friend', 'private'))).toEqual(['request', 'request.private', 'request.friend']);
  });

  it('skips duplicates for plain routes and gives every delivery to ! routes', () => {
    const handlers = new Handlers(() => {});
    const calls: string[] = [];
    handlers.handle('message', () => {
      calls.push('plain');
    });
    handlers.handle('!message', () => {
      calls.push('bang');
    });
    handlers.handle(['notice.group_increase', '!message.group'], () => {
      calls.push('array');
    });
    handlers.dispatch(event('message', 'group'), false);
    handlers.dispatch(event('message', 'group'), true);
    expect(calls).toEqual(['plain', 'bang', 'array', 'bang', 'array']);
  });

  it('never runs one handler twice for one event object, even with !', () => {
    const handlers = new Handlers(() => {});
    let count = 0;
    handlers.handle(['!message', '!message.group'], () => {
      count++;
    });
    const one = event('message', 'group');
    handlers.dispatch(one, false);
    handlers.dispatch(one, true);
    expect(count).toBe(1);
    handlers.dispatch(event('message', 'group'), true);
    expect(count).toBe(2);
  });

  it('reports a throwing or rejecting handler without stopping the others', async () => {
    const errors: unknown[] = [];
    const handlers = new Handlers((error) => errors.push(error));
    let ran = false;
    handlers.handle('message', () => {
      throw new Error('boom');
    });
    handlers.handle('message', async () => {
      throw new Error('async boom');
    });
    handlers.handle('message', () => {
      ran = true;
    });
    handlers.dispatch(event('message'), false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toBe(true);
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom', 'async boom']);
  });
});
