import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { tempDir } from '../support/helpers.js';

const secret = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
const load = (file: Record<string, unknown>, env: Record<string, string> = {}) =>
  loadConfig({ env, file, cwd: tempDir().path });

describe('agent.claims', () => {
  it('is off unless set', () => {
    expect(load({}).agent.claims).toBe(undefined);
  });

  it('takes the default of a key left out', () => {
    expect(load({ agent: { claims: {} } }).agent.claims).toEqual({ leaseMs: 60_000, maxAttempts: 10 });
    expect(load({ agent: { claims: { leaseMs: 5_000 } } }).agent.claims).toEqual({ leaseMs: 5_000, maxAttempts: 10 });
  });

  it('is turned on by either environment variable, the other taking its default', () => {
    expect(load({}, { INTAKE_AGENT_CLAIMS_LEASE_MS: '30000' }).agent.claims).toEqual({
      leaseMs: 30_000,
      maxAttempts: 10,
    });
    expect(load({}, { INTAKE_AGENT_CLAIMS_MAX_ATTEMPTS: '3' }).agent.claims).toEqual({
      leaseMs: 60_000,
      maxAttempts: 3,
    });
  });

  it('refuses a lease or an attempt count out of range, naming the setting', () => {
    expect(() => load({ agent: { claims: { leaseMs: 999 } } })).toThrow(/agent\.claims\.leaseMs/);
    expect(() => load({ agent: { claims: { leaseMs: 3_600_001 } } })).toThrow(/agent\.claims\.leaseMs/);
    expect(() => load({}, { INTAKE_AGENT_CLAIMS_MAX_ATTEMPTS: '0' })).toThrow(/INTAKE_AGENT_CLAIMS_MAX_ATTEMPTS/);
    expect(() => load({ agent: { claims: { maxAttempts: 101 } } })).toThrow(/agent\.claims\.maxAttempts/);
    expect(() => load({ agent: { claims: { leaseMs: 5_000, lease: 1 } } })).toThrow(/agent\.claims/);
  });

  it('refuses to start with agent.url too, naming both', () => {
    const both = () => load({ agent: { url: 'http://127.0.0.1:9000/inbox', secret, claims: {} } });
    expect(both).toThrow(/agent\.url \(INTAKE_AGENT_URL\) and agent\.claims \(INTAKE_AGENT_CLAIMS_\*\) are both set/);
  });
});
