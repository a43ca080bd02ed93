import { describe, expect, it } from 'vitest';
import { createAdapter } from '../../../src/adapters/index.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixture } from '../../fixtures/index.js';

const adapter = () =>
  createAdapter(
    loadConfig({ env: {}, file: { channels: [{ id: 'qq-a', adapter: 'onebot', namespace: 'qq', secret: 's' }] } })
      .channels[0]!,
  );
const delivery: RawDelivery = { headers: {}, body: Buffer.alloc(0), query: new URLSearchParams(), now: 1718000300_000 };

describe('OneBot input status (NapCat)', () => {
  it('turns a friend typing into a typing signal for their private session, with no event', () => {
    const normalized = adapter().normalize(fixture('onebot', 'notice-input-status.json'), delivery);
    expect(normalized).toEqual({
      events: [],
      reply: { status: 204 },
      typing: [{ sessionKey: 'qq:12345678', senderId: '12345678' }],
    });
  });

  it('holds for a voice message being spoken too, with a QQ number sent as a string', () => {
    const body = { ...fixture('onebot', 'notice-input-status.json'), event_type: 0, user_id: '12345678' };
    expect(adapter().normalize(body, delivery).typing).toEqual([{ sessionKey: 'qq:12345678', senderId: '12345678' }]);
  });

  it('ignores another state or a missing user: no signal, no event', () => {
    for (const change of [{ event_type: 2 }, { user_id: 0 }, { user_id: undefined }]) {
      const normalized = adapter().normalize({ ...fixture('onebot', 'notice-input-status.json'), ...change }, delivery);
      expect(normalized).toEqual({ events: [], ignored: 1, reply: { status: 204 } });
    }
  });

  it('leaves other notify notices events, as a poke', () => {
    const normalized = adapter().normalize(fixture('onebot', 'notice-poke.json'), delivery);
    expect(normalized.typing).toBeUndefined();
    expect(normalized.events.map((event) => [event.kind, event.subType])).toEqual([['notice', 'poke']]);
  });
});
