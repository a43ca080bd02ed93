// The client as a worker imports it: by the package's name, from the build.
import { describe, expect, it } from 'vitest';
import { ClientError, claims, events, isClientError, type StreamEvent } from 'agent-intake/client';

describe('agent-intake/client', () => {
  it('resolves by the package name to the built client, with its iterators and its error', () => {
    expect([typeof claims, typeof events, typeof isClientError]).toEqual(['function', 'function', 'function']);
    const error = new ClientError(409, 'claim_lost', 'the lease on this output ran out');
    expect([isClientError(error), error.name, error.status, error.code]).toEqual([
      true,
      'ClientError',
      409,
      'claim_lost',
    ]);
  });

  it("types an event's data by its type", () => {
    const seen = (event: StreamEvent): string =>
      event.type === 'chat.processedMessage'
        ? event.data.content
        : event.type === 'gap'
          ? `${event.after}..${event.next}`
          : event.data.sessionKey;
    expect(seen({ type: 'gap', after: 4, next: 9, reset: false })).toBe('4..9');
  });
});
