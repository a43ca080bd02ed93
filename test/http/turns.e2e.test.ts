import { afterEach, describe, expect, it } from 'vitest';
import type { Output, ProcessedMessage } from '../../src/events/output.js';
import { postJson, type Running, startService, tempDir, until } from '../support/helpers.js';
import { recordingLogger } from '../support/logger.js';
import { serve, type TestServer } from '../support/servers.js';

const SECRET = 'whsec_' + Buffer.from('agent-shared-secret-0123456789').toString('base64');

describe('agent turns over HTTP (SQLite store, real server)', () => {
  let service: Running | undefined;
  let agent: TestServer | undefined;
  afterEach(async () => {
    await service?.stop();
    await agent?.close();
    service = undefined;
    agent = undefined;
  });

  const start = (extra: Record<string, unknown> = {}, dir?: string) =>
    startService(
      {
        debounce: { windowMs: 30, maxWaitMs: 100 },
        turns: { mode: 'collect' },
        ...extra,
      },
      dir ? { dir } : {},
    );
  const collect = (running: Running) => {
    const outputs: ProcessedMessage[] = [];
    running.intake.on('chat.processedMessage', (output: Output) => {
      outputs.push(output as ProcessedMessage);
    });
    return outputs;
  };
  const say = (running: Running, id: string, content: string) =>
    postJson(`${running.url}/webhooks/generic`, { id, sessionKey: 'cli:a', content });
  const turnOf = async (running: Running) =>
    (await fetch(`${running.url}/v1/sessions/${encodeURIComponent('cli:a')}/turn`)).json() as Promise<
      Record<string, unknown>
    >;

  it('closes a turn by POST /v1/turns/<id>/done: 404 for an unknown id, 200 once, 200 again without emitting twice; the trace shows the hold', async () => {
    service = await start();
    const outputs = collect(service);
    await say(service, 'm1', 'check ORD-123');
    await until(() => outputs.length === 1);
    const first = outputs[0]!;
    await say(service, 'm2', 'also ORD-124');
    await until(async () => (await turnOf(service!)).held === 1);
    expect(await turnOf(service)).toMatchObject({ open: true, outputId: first.id, held: 1 });

    const unknown = await postJson(`${service.url}/v1/turns/V1StGXR8_Z5jdHi6B-myT/done`, {});
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('turn_unknown');
    const closed = await postJson(`${service.url}/v1/turns/${first.id}/done`, {});
    expect(closed).toMatchObject({ status: 200, body: { closed: true, sessionKey: 'cli:a', released: 1 } });
    await until(() => outputs.length === 2);
    expect(outputs[1]).toMatchObject({ content: 'also ORD-124', followsUp: first.id });
    const again = await postJson(`${service.url}/v1/turns/${first.id}/done`, {});
    expect(again).toMatchObject({ status: 200, body: { closed: false, already: true } });
    expect(await turnOf(service)).toMatchObject({ open: true, outputId: outputs[1]!.id, held: 0 });

    const trace = (await (await fetch(`${service.url}/v1/trace/m2`)).json()) as {
      turns: Array<{ reason: string }>;
      outputs: Array<{ id: string }>;
    };
    expect(trace.outputs.map((o) => o.id)).toEqual([outputs[1]!.id]);
    expect(trace.turns.map((t) => t.reason)).toEqual([
      expect.stringMatching(new RegExp(`^held by turn ${first.id}`)),
      expect.stringMatching(new RegExp(`^released at .*following up turn ${first.id}$`)),
    ]);
  });

  it('closes a turn when the agent answers the push {"turn":"done"}; any other answer leaves it open', async () => {
    // The agent answers the first push only once the second message is held; then "ok" to the rest.
    let release: (() => void) | undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    agent = await serve((req, res, n) => {
      req.resume();
      req.on('end', () => {
        if (n === 1) void held.then(() => res.end('{"turn":"done"}'));
        else res.end('ok');
      });
    });
    service = await start({ agent: { url: `http://127.0.0.1:${agent.port}/inbox`, secret: SECRET, timeoutMs: 5000 } });
    const outputs = collect(service);
    await say(service, 'm1', 'first');
    await until(() => outputs.length === 1);
    await say(service, 'm2', 'second');
    await until(async () => (await turnOf(service!)).held === 1);
    release?.();
    await until(() => outputs.length === 2);
    expect(outputs[1]).toMatchObject({ content: 'second', followsUp: outputs[0]!.id });
    // The answer to the second push is not a done: its turn stays open (until maxMs).
    await agent.arrived('/inbox', 2);
    await until(async () => (await service!.intake.store.outboxGet(outputs[1]!.id))?.state === 'delivered');
    expect(await turnOf(service)).toMatchObject({ open: true, outputId: outputs[1]!.id });
  });

  it('counts every open turn in /v1/stats and inbox_turns_open, past the 100 sessions the stats list', async () => {
    service = await start();
    const outputs = collect(service);
    for (let i = 0; i < 105; i++)
      await postJson(`${service.url}/webhooks/generic`, { id: `c${i}`, sessionKey: `cli:${i}`, content: 'hi' });
    await until(() => outputs.length === 105, 10_000);
    const stats = (await (await fetch(`${service.url}/v1/stats`)).json()) as {
      turns: { open: number; sessions: unknown[] };
    };
    expect(stats.turns.open).toBe(105);
    expect(stats.turns.sessions).toHaveLength(20);
    expect(await (await fetch(`${service.url}/metrics`)).text()).toMatch(/^inbox_turns_open 105$/m);
  });

  it('logs a push answer with a body that is not {"turn":"done"} (the turn stays open); an empty body is no turn news, not logged', async () => {
    const { logger, lines } = recordingLogger('warn');
    agent = await serve((req, res, n) => {
      req.resume();
      req.on('end', () => res.end(n === 1 ? '{"turn":"finished"}' : ''));
    });
    service = await startService(
      {
        debounce: { windowMs: 30, maxWaitMs: 100 },
        turns: { mode: 'steer' },
        agent: { url: `http://127.0.0.1:${agent.port}/inbox`, secret: SECRET, timeoutMs: 5000 },
      },
      { logger },
    );
    const outputs = collect(service);
    await say(service, 'm1', 'first');
    await until(() => outputs.length === 1);
    await say(service, 'm2', 'second');
    await until(() => outputs.length === 2);
    await until(async () => (await service!.intake.store.outboxGet(outputs[1]!.id))?.state === 'delivered');
    await until(async () => (await service!.intake.store.outboxGet(outputs[0]!.id))?.state === 'delivered');
    const answers = lines.filter((line) => String(line.msg).startsWith('agent answer is not'));
    expect(answers).toEqual([expect.objectContaining({ id: outputs[0]!.id, answer: '{"turn":"finished"}' })]);
    expect(await turnOf(service)).toMatchObject({ open: true, outputId: outputs[0]!.id });
  });

  it('keeps held messages and the turn across a restart (the file reopened), released once after it', async () => {
    const dir = tempDir();
    service = await start({}, dir.path);
    let outputs = collect(service);
    await say(service, 'm1', 'first');
    await until(() => outputs.length === 1);
    const first = outputs[0]!;
    await say(service, 'm2', 'second');
    await until(async () => (await turnOf(service!)).held === 1);
    await service.stop();
    // Started again with another mode: what was held keeps the rule it was held by.
    service = await start({ turns: { mode: 'steer' } }, dir.path);
    outputs = collect(service);
    expect(await turnOf(service)).toMatchObject({ open: true, outputId: first.id, held: 1 });
    expect((await postJson(`${service.url}/v1/turns/${first.id}/done`, {})).body).toMatchObject({
      closed: true,
      released: 1,
    });
    await until(() => outputs.length === 1);
    expect(outputs[0]).toMatchObject({ content: 'second', followsUp: first.id });
    const all = await service.intake.store.outboxAfter(0, 10);
    expect(all.map((r) => JSON.parse(r.body).content)).toEqual(['first', 'second']);
    await service.stop();
    service = undefined;
    dir.remove();
  });
});
