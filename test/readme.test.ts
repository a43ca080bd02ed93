import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/service/configure.js';
import type { ProcessedMessage } from '../src/events/output.js';
import { postJson, startService, tempDir, type Running } from './support/helpers.js';
import { INTERNAL_REFERENCE } from './support/internal-references.js';
import { readEvents } from './support/sse.js';
import { ManualClock } from './support/manual-clock.js';

const README = readFileSync('README.md', 'utf8');
const DOCS = readdirSync('docs')
  .filter((name) => name.endsWith('.md'))
  .map((name) => join('docs', name));
/** The guides: every page of docs/ (the benchmarks' history of past runs lives in bench/). */
const GUIDES = DOCS;

describe('the README, as a newcomer reads it', () => {
  it('stays a guide: short, and naming no file a user does not have', () => {
    expect(README.length).toBeLessThan(24_000);
    for (const text of [README, ...GUIDES.map((path) => readFileSync(path, 'utf8'))]) {
      expect(text).not.toMatch(INTERNAL_REFERENCE);
    }
  });

  it('asks for the Node version package.json (and undici) requires', () => {
    const engines = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }).engines.node;
    expect(engines).toMatch(/^>=\d+\.\d+\.\d+$/);
    expect(README).toContain(`Node ${engines.slice(2)} or newer`);
  });

  it('says a single message waits the debounce window', () => {
    expect(README).toMatch(/1\.5 s[^.]*debounce window[^.]*even when it is alone/);
  });

  it("has recipes whose configuration starts as it is written (the channels' secrets from the environment)", () => {
    const blocks = [...README.matchAll(/```json\n([\s\S]*?)```/g)]
      .map((match) => JSON.parse(match[1] as string) as Record<string, unknown>)
      .filter((block) => 'channels' in block);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const env = {
      TG_TOKEN: '123:abc',
      QQ_TOKEN: 'qq-token',
      SLACK_SIGNING_SECRET: 'slack-secret',
      SLACK_BOT_TOKEN: 'xoxb-1',
      AGENT_SECRET: 'whsec_' + Buffer.from('a'.repeat(32)).toString('base64'),
    };
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

describe('the quick start, run as written on the defaults', () => {
  const quickStart = README.slice(README.indexOf('## Quick start'), README.indexOf('## Recipes'));
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('merges its three fragments into one message about 1.5 s after the last one', async () => {
    const parts = [...(/for part in ((?:'[^']*' ?)+); do/.exec(quickStart)?.[1] ?? '').matchAll(/'([^']*)'/g)].map(
      (match) => match[1] as string,
    );
    const sessionKey = /\\"sessionKey\\":\\"([^\\]+)\\"/.exec(quickStart)?.[1];
    const shown = /^data: (\{.*\})$/m.exec(quickStart)?.[1] ?? '';
    const shownId = /^id: (\S+)$/m.exec(quickStart)?.[1] ?? '';
    expect(parts).toHaveLength(3);
    expect(sessionKey).toBe('cli:alice');
    const clock = new ManualClock();
    service = await startService({}, { clock });
    const outputs: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (message) => outputs.push(message));
    for (const content of parts)
      expect((await postJson(`${service.url}/webhooks/generic`, { sessionKey, content })).status).toBe(200);

    await clock.advance(1_450);
    expect(outputs).toEqual([]);
    await clock.advance(100);
    await service.intake.settle();
    expect(outputs).toHaveLength(1);
    const [frame] = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frame).toMatchObject({
      event: 'chat.processedMessage',
      data: { type: 'chat.processedMessage', seq: 1, sessionKey },
    });
    // The seq the README shows; what may follow it (the life of the store's seqs) differs per store.
    expect(frame?.id.split('@')[0]).toBe(shownId.split('@')[0]);
    expect(shownId.split('@')[0]).toBe('1');
    // What the README shows of the frame, field by field.
    const fields = [...shown.matchAll(/"(\w+)":("[^"…]*"|\d+)/g)].map(
      ([, key, value]) => [key as string, JSON.parse(value as string) as unknown] as const,
    );
    expect(fields.map(([key]) => key)).toEqual(expect.arrayContaining(['sessionKey', 'content', 'merged']));
    for (const [key, value] of fields) expect(frame?.data[key], key).toEqual(value);
  });

  it("prints what the README shows, word for word, on a stream opened before the fragments as the README's curl is", async () => {
    const fragments = [...(/for part in ((?:'[^']*' ?)+); do/.exec(quickStart)?.[1] ?? '').matchAll(/'([^']*)'/g)].map(
      (match) => match[1] as string,
    );
    expect(fragments).toEqual(['帮我查一下', '订单 ORD-123', '的状态']);
    expect(quickStart).toContain('\\"sessionKey\\":\\"cli:alice\\"');
    const block = /\n```\n(retry: [^`]*?)\n```/.exec(quickStart)?.[1] ?? '';
    expect(block).toMatch(/^id: /m);
    // Word for word, but for what the README marks with … and the life after the id's seq (a tag per store).
    const pattern = block
      .split('…')
      .map((piece) => piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^\n]*?')
      .replace(/^(id: \d+@)\S+$/m, '$1[\\w-]+');
    const clock = new ManualClock();
    service = await startService({}, { clock });
    const controller = new AbortController();
    const response = await fetch(`${service.url}/v1/events`, { signal: controller.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (done: (sofar: string) => boolean) => {
      while (!done(text)) {
        const { value, done: ended } = await reader.read();
        if (ended) break;
        text += decoder.decode(value, { stream: true });
      }
    };
    await readUntil((sofar) => sofar.includes('\n\n'));
    for (const content of fragments)
      expect((await postJson(`${service.url}/webhooks/generic`, { sessionKey: 'cli:alice', content })).status).toBe(
        200,
      );
    await clock.advance(1_550);
    await readUntil((sofar) => /\ndata: [^\n]*\n\n/.test(sofar));
    controller.abort();
    expect(text).toMatch(new RegExp(`^${pattern}\n\n$`));
  });
});
