import type { RequestError } from '../../core/errors.js';

/** A JSON object of an untrusted payload; read its fields with `own`, never by plain indexing. */
export type Json = Readonly<Record<string, unknown>>;

/** Timestamps are seconds since the epoch before 3000-01-01T00:00:00Z; anything else is a bad payload. */
export const MAX_TIMESTAMP_S = 32_503_680_000;

/** What a value is, in the words of an error message (`a string`, `null`, `an array`). */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : 'an array';
  switch (typeof value) {
    case 'string':
      return value === '' ? 'an empty string' : 'a string';
    case 'number':
      return Number.isFinite(value) ? `the number ${value}` : 'a non-finite number';
    case 'object':
      return 'an object';
    case 'boolean':
      return `${value}`;
    default:
      return typeof value;
  }
}

/** The object's own field `key`: `"constructor"` or `"toString"` never find Object.prototype's. */
export function own(object: Json, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

const decimal = /^\d{1,16}(\.\d{1,9})?$/;

/**
 * Reads the fields of one platform payload. Every read either returns the type the adapter
 * needs or throws the adapter's 400 naming the field's path, what is allowed and what came
 * (`entry[0].changes must be an array, got the number 0`). Absent and `null` optional fields
 * are the same: some platforms send `null` for "none".
 */
export class PayloadReader {
  constructor(private readonly fail: (problem: string) => RequestError) {}

  object(value: unknown, path: string, what = 'an object'): Json {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Json;
    throw this.fail(
      value === undefined ? `${path} is required (${what})` : `${path} must be ${what}, got ${kindOf(value)}`,
    );
  }

  optObject(value: unknown, path: string, what = 'an object'): Json | undefined {
    return value === undefined || value === null ? undefined : this.object(value, path, what);
  }

  array(value: unknown, path: string): readonly unknown[] {
    if (Array.isArray(value)) return value;
    throw this.fail(
      value === undefined ? `${path} is required (an array)` : `${path} must be an array, got ${kindOf(value)}`,
    );
  }

  optArray(value: unknown, path: string): readonly unknown[] {
    return value === undefined || value === null ? [] : this.array(value, path);
  }

  /** A non-empty string, or a number (ids come as either), as a string. */
  text(value: unknown, path: string): string {
    const text = this.optText(value, path);
    if (text === undefined || text === '') throw this.fail(`${path} is required (a non-empty string)`);
    return text;
  }

  optText(value: unknown, path: string): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value === 'string') return value;
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
    throw this.fail(`${path} must be a string, got ${kindOf(value)}`);
  }

  optNumber(value: unknown, path: string): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value === 'number' && Number.isFinite(value)) return value;
    if (typeof value === 'string' && decimal.test(value)) return Number(value);
    throw this.fail(`${path} must be a number, got ${kindOf(value)}`);
  }

  /**
   * A platform timestamp as whole seconds, or `receivedMs` when the field is absent. A number
   * or a decimal string in `unit`; outside 1970..3000 (negative, non-finite, or milliseconds
   * where seconds belong) it is a bad payload, not a message stamped in the year 50000.
   */
  timestamp(value: unknown, path: string, unit: 's' | 'ms', receivedMs: number): number {
    const raw = this.optNumber(value, path);
    if (raw === undefined) return Math.floor(receivedMs / 1000);
    const seconds = Math.floor(unit === 'ms' ? raw / 1000 : raw);
    if (seconds >= 0 && seconds < MAX_TIMESTAMP_S) return seconds;
    const hint =
      unit === 's' && seconds >= MAX_TIMESTAMP_S && seconds < MAX_TIMESTAMP_S * 1000
        ? ' (milliseconds where seconds belong?)'
        : '';
    throw this.fail(
      `${path} must be ${unit === 's' ? 'seconds' : 'milliseconds'} since 1970 before the year 3000, got ${raw}${hint}`,
    );
  }
}
