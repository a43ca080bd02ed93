import type Koa from 'koa';
import { type ErrorCode, RequestError } from '../core/errors.js';

/**
 * A numeric query parameter of the operator API, as given: undefined when absent. Given twice
 * (`?after=1&after=2`) or empty (`?after=`) it is a 400 with `code` rather than one of the
 * values, or none, picked in silence: a client that sends either has a bug to see.
 */
export function numericParam(ctx: Koa.Context, name: string, code: ErrorCode, expected: string): string | undefined {
  const raw = ctx.query[name];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) {
    throw new RequestError(
      code,
      400,
      `${name} is given ${raw.length} times (${raw.map((value) => `${name}=${value.slice(0, 40)}`).join('&')}); give it once: ${expected}`,
    );
  }
  if (raw === '') throw new RequestError(code, 400, `${name} is empty; give ${expected}, or leave ${name} out`);
  return raw;
}
