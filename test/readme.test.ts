import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/configure.js';
import { tempDir } from './helpers.js';

const README = readFileSync('README.md', 'utf8');
const DOCS = readdirSync('docs').filter((name) => name.endsWith('.md')).map((name) => join('docs', name));
/** The guides: every page of docs/ (the benchmarks' history of past runs lives in bench/). */
const GUIDES = DOCS;

describe('the README, as a newcomer reads it', () => {
  it('stays a guide: short, and naming no file a user does not have', () => {
    expect(README.length).toBeLessThan(24_000);
    for (const text of [README, ...GUIDES.map((path) => readFileSync(path, 'utf8'))]) {
      expect(text).not.toMatch(/\.\.\/shared|CONTRACT|seeds\/|farm-studio|this session/);
    }
  });

  it('says a single message waits the debounce window', () => {
    expect(README).toMatch(/1\.5 s[^.]*debounce window[^.]*even when it is alone/);
  });

  it("has recipes whose configuration starts as it is written (the channels' secrets from the environment)", () => {
    const blocks = [...README.matchAll(/```json\n([\s\S]*?)```/g)].map((match) => JSON.parse(match[1] as string) as Record<string, unknown>).filter((block) => 'channels' in block);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const env = { TG_TOKEN: '123:abc', QQ_TOKEN: 'qq-token', SLACK_SIGNING_SECRET: 'slack-secret', SLACK_BOT_TOKEN: 'xoxb-1', AGENT_SECRET: 'whsec_' + Buffer.from('a'.repeat(32)).toString('base64') };
    for (const file of blocks) {
      const config = loadConfig({ env, cwd: tempDir().path, file });
      expect(config.channels.length).toBeGreaterThan(0);
    }
  });

  it('links only to files that exist', () => {
    for (const path of ['README.md', ...DOCS]) {
      const text = readFileSync(path, 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target as string)) continue;
        expect(existsSync(join(dirname(path), target as string)), `${path} links to ${target}`).toBe(true);
      }
    }
  });
});
