import { describe, expect, it } from 'vitest';
import { IntakeError, isIntakeError } from '../../src/core/errors.js';
import { isMediaError, MediaError } from '../../src/core/errors.js';
import { BlockedAddressError } from '../../src/media/guard.js';

describe('media errors', () => {
  it('are IntakeErrors with a media_<kind> code, keeping kind and retryable', () => {
    const error = new MediaError('timeout', 'no complete download within 100 ms', false, undefined, { channel: 'wa' });
    expect(error).toBeInstanceOf(IntakeError);
    expect(isIntakeError(error) && isMediaError(error)).toBe(true);
    expect(error).toMatchObject({
      name: 'MediaError',
      code: 'media_timeout',
      status: 502,
      kind: 'timeout',
      retryable: false,
      context: { stage: 'media', channel: 'wa' },
    });
    expect(new MediaError('http', 'HTTP 429', true, 1000)).toMatchObject({
      code: 'media_http',
      retryable: true,
      retryAfterMs: 1000,
    });
  });

  it('makes a blocked address an IntakeError that is never retried', () => {
    const error = new BlockedAddressError('rebind.test resolves to 127.0.0.1 is a loopback address');
    expect(error).toBeInstanceOf(IntakeError);
    expect(error).toMatchObject({
      name: 'BlockedAddressError',
      code: 'media_blocked',
      kind: 'blocked',
      retryable: false,
    });
  });
});
