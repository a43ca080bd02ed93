import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../src/core/clock.js';

/** A request the fake received, as it came. */
export interface ClaimsRequest {
  method: string;
  /** The path without the query. */
  path: string;
  query: URLSearchParams;
  /** The JSON body (undefined when empty). */
  body: any;
  authorization: string | undefined;
}

/** An answer a request gets in place of what the queue holds. */
export interface Scripted {
  status: number;
  code?: string;
  message?: string;
  headers?: Record<string, string>;
  /** The JSON body, in place of the error `code` and `message` make. */
  body?: unknown;
  /** Never answer (a service that hung). */
  hang?: true;
}

/** One output of the fake's queue and where it stands. */
export interface FakeRecord {
  output: { type: 'chat.processedMessage'; id: string; seq: number; sessionKey: string; content: string };
  state: 'pending' | 'delivered' | 'dead';
  attempts: number;
  lastError?: string;
  retryAt: number;
  lease?: { token: string; until: number; start: number };
}

export interface FakeClaimsOptions {
  /** The operator token every request must carry. */
  token?: string;
  leaseMs?: number;
  maxAttempts?: number;
  /** Leases, retries and the polls' waits run on it. @default the real time */
  clock?: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  /** @default any free one */
  port?: number;
}

const realTime: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'> = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * The claims routes as the service answers them (`POST /v1/claims`, `/v1/claims/<id>/ack`,
 * `/nack`, `/extend`): a queue per session, one output of a session leased at a time, a lease
 * that runs out offers it again, `maxAttempts` makes it dead. Every request is kept in
 * `requests`; `script` answers the next polls, and `scriptActions` the next acks, nacks and
 * extends, with what a test wants instead (a 503).
 */
export class FakeClaims {
  readonly requests: ClaimsRequest[] = [];
  readonly script: Scripted[] = [];
  /** Answers for the next acks, nacks and extends, in place of what the queue says. */
  readonly scriptActions: Scripted[] = [];
  readonly records = new Map<string, FakeRecord>();
  /** A stopping service: polls answer 204 at once. */
  draining = false;
  private readonly sessions = new Map<string, FakeRecord[]>();
  private readonly waiting = new Set<() => boolean>();
  private readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  private readonly leaseMs: number;
  private readonly maxAttempts: number;
  private seq = 0;

  private constructor(
    readonly server: Server,
    private readonly options: FakeClaimsOptions,
  ) {
    this.clock = options.clock ?? realTime;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.maxAttempts = options.maxAttempts ?? 10;
  }

  static async start(options: FakeClaimsOptions = {}): Promise<FakeClaims> {
    const server = createServer();
    const fake = new FakeClaims(server, options);
    server.on('request', (req, res) => void fake.serve(req, res));
    server.listen(options.port ?? 0, '127.0.0.1');
    await once(server, 'listening');
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Queue an output for `sessionKey`; a waiting poll takes it. */
  add(sessionKey: string, content = `message ${this.seq + 1}`): FakeRecord['output'] {
    const seq = ++this.seq;
    // Output ids are 21 URL-safe characters without '.'.
    const output = {
      type: 'chat.processedMessage' as const,
      id: `out${String(seq).padStart(18, '0')}`,
      seq,
      sessionKey,
      content,
    };
    const record: FakeRecord = { output, state: 'pending', attempts: 0, retryAt: 0 };
    this.records.set(output.id, record);
    const queue = this.sessions.get(sessionKey) ?? [];
    queue.push(record);
    this.sessions.set(sessionKey, queue);
    for (const wake of this.waiting) if (wake()) this.waiting.delete(wake);
    return output;
  }

  /** The requests to `path` (`/v1/claims`, `/v1/claims/<id>/ack`, ...). */
  to(path: string | RegExp): ClaimsRequest[] {
    return this.requests.filter((request) =>
      typeof path === 'string' ? request.path === path : path.test(request.path),
    );
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const request: ClaimsRequest = {
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      body: text ? JSON.parse(text) : undefined,
      authorization: req.headers.authorization,
    };
    this.requests.push(request);
    if (this.options.token !== undefined && request.authorization !== `Bearer ${this.options.token}`) {
      res.setHeader('www-authenticate', 'Bearer');
      const code = request.authorization ? 'bad_token' : 'missing_token';
      return answer(res, 401, { error: { code, message: 'the API token is not server.apiToken' } });
    }
    if (request.method === 'POST' && request.path === '/v1/claims') return this.poll(request, res);
    const action = /^\/v1\/claims\/([^/]+)\/(ack|nack|extend)$/.exec(request.path);
    if (request.method === 'POST' && action)
      return this.settle(decodeURIComponent(action[1]!), action[2]!, request, res);
    answer(res, 404, { error: { code: 'not_found', message: `no route ${request.method} ${request.path}` } });
  }

  private poll(request: ClaimsRequest, res: ServerResponse): void {
    const max = bounded(request.query, 'max', 1, 1, 100);
    const waitMs = bounded(request.query, 'waitMs', 30_000, 0, 60_000);
    if (max === undefined) return answer(res, 400, { error: { code: 'bad_max', message: 'max must be 1-100' } });
    if (waitMs === undefined)
      return answer(res, 400, { error: { code: 'bad_wait', message: 'waitMs must be 0-60000' } });
    const scripted = this.script.shift();
    if (scripted) return scriptedAnswer(res, scripted);
    const offer = (): boolean => {
      const taken = this.take(max);
      if (taken.length === 0) return false;
      answer(res, 200, { claims: taken });
      return true;
    };
    if (this.draining || offer()) {
      if (!res.headersSent) answer(res, 204);
      return;
    }
    if (waitMs === 0) return answer(res, 204);
    const wake = (): boolean => {
      if (res.writableEnded || !offer()) return res.writableEnded;
      this.clock.clearTimeout(timer);
      return true;
    };
    const timer = this.clock.setTimeout(() => {
      this.waiting.delete(wake);
      if (!res.writableEnded) answer(res, 204);
    }, waitMs);
    this.waiting.add(wake);
    res.on('close', () => {
      this.waiting.delete(wake);
      this.clock.clearTimeout(timer);
    });
  }

  /** The head of each session that is free to claim, up to `max`, each leased and its attempt counted. */
  private take(max: number): Array<{ id: string; output: FakeRecord['output']; attempt: number; leaseUntil: number }> {
    const now = this.clock.now();
    const taken = [];
    for (const queue of this.sessions.values()) {
      if (taken.length >= max) break;
      for (;;) {
        const head = queue.find((record) => record.state === 'pending');
        if (!head || (head.lease && head.lease.until >= now) || head.retryAt > now) break;
        head.attempts += 1;
        if (head.attempts > this.maxAttempts) {
          head.state = 'dead';
          head.lastError = `lease ran out ${head.attempts - 1} times`;
          delete head.lease;
          continue;
        }
        head.lease = { token: randomBytes(6).toString('base64url'), until: now + this.leaseMs, start: now };
        const id = `${head.output.id}.${head.attempts}.${head.lease.token}`;
        taken.push({ id, output: head.output, attempt: head.attempts, leaseUntil: head.lease.until });
        break;
      }
    }
    return taken;
  }

  private settle(id: string, action: string, request: ClaimsRequest, res: ServerResponse): void {
    const scripted = this.scriptActions.shift();
    if (scripted) return scriptedAnswer(res, scripted);
    const lost = () =>
      answer(res, 409, {
        error: {
          code: 'claim_lost',
          message: 'the lease on this output ran out or was taken by another claim; it is offered again',
        },
      });
    const parts = /^([\w-]{21})\.(\d+)\.([\w-]+)$/.exec(id);
    const record = parts && this.records.get(parts[1]!);
    if (!parts || !record) return answer(res, 404, { error: { code: 'unknown_claim', message: `no claim ${id}` } });
    const attempt = Number(parts[2]);
    const now = this.clock.now();
    if (record.state === 'delivered' && record.attempts === attempt)
      return action === 'ack' ? answer(res, 200, { acked: true, already: true }) : lost();
    if (!record.lease || record.lease.token !== parts[3] || record.lease.until < now) return lost();
    const body = (request.body ?? {}) as { retryAfterMs?: unknown; error?: unknown; leaseMs?: unknown };
    if (action === 'ack') {
      record.state = 'delivered';
      delete record.lease;
      return answer(res, 200, { acked: true });
    }
    if (action === 'nack') {
      const retryAfterMs = body.retryAfterMs ?? 1000;
      if (!Number.isInteger(retryAfterMs) || (retryAfterMs as number) < 0 || (retryAfterMs as number) > 86_400_000)
        return answer(res, 400, { error: { code: 'bad_retry', message: 'retryAfterMs must be 0-86400000' } });
      delete record.lease;
      if (attempt >= this.maxAttempts) {
        record.state = 'dead';
        record.lastError = typeof body.error === 'string' ? body.error.slice(0, 500) : `nacked ${attempt} times`;
      } else record.retryAt = now + (retryAfterMs as number);
      for (const wake of this.waiting) if (wake()) this.waiting.delete(wake);
      return answer(res, 200, { nacked: true });
    }
    const total = this.leaseMs * this.maxAttempts;
    const leaseMs = body.leaseMs as number;
    if (!Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > total || now + leaseMs - record.lease.start > total)
      return answer(res, 400, { error: { code: 'bad_lease', message: `leaseMs must be 1-${total} in all` } });
    record.lease.until = now + leaseMs;
    answer(res, 200, { leaseUntil: record.lease.until });
  }
}

function scriptedAnswer(res: ServerResponse, scripted: Scripted): void {
  if (scripted.hang) return;
  for (const [name, value] of Object.entries(scripted.headers ?? {})) res.setHeader(name, value);
  const error = scripted.code
    ? { error: { code: scripted.code, message: scripted.message ?? scripted.code } }
    : undefined;
  answer(res, scripted.status, scripted.body ?? error);
}

function answer(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A whole-number query parameter in range (its default when absent); undefined when bad or given twice. */
function bounded(query: URLSearchParams, name: string, fallback: number, min: number, max: number): number | undefined {
  const values = query.getAll(name);
  if (values.length === 0) return fallback;
  const value = Number(values[0]);
  return values.length === 1 && /^\d+$/.test(values[0]!) && value >= min && value <= max ? value : undefined;
}
