import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { envSettings } from '../../src/config/load.js';

describe('.env.example', () => {
  it('documents every environment variable the service reads', () => {
    const text = readFileSync('.env.example', 'utf8');
    const documented = new Set([...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]));
    const missing = envSettings.map(([name]) => name).filter((name) => !documented.has(name));
    expect(missing).toEqual([]);
    expect(documented.has('INTAKE_CONFIG')).toBe(true);
  });
});

describe('the configuration reference', () => {
  it('names every environment variable in its table', () => {
    const text = readFileSync('docs/configuration.md', 'utf8');
    expect(envSettings.map(([name]) => name).filter((name) => !text.includes(`\`${name}\``))).toEqual([]);
  });
});
