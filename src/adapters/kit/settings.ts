import { z } from 'zod';

// Building blocks of adapter settings schemas. A setting is usually `${ENV}` in the config
// file, which expands to "" when the variable is empty: "" means "not set", as it always has.

/** An optional string setting; "" counts as unset. */
export function optionalText() {
  return z
    .string({ error: 'must be a string' })
    .optional()
    .transform((value) => (value === '' ? undefined : value));
}

/** A platform API base URL setting, or the platform's own, without a trailing slash. */
export function baseUrl(fallback: string) {
  return optionalText().transform((value) => (value ?? fallback).replace(/\/$/, ''));
}

/** A string setting the channel cannot work without; "" (an empty `${ENV}`) is missing too. */
export function requiredText(what: string) {
  const missing = `is required (${what})`;
  return z
    .string({ error: (issue) => (issue.input === undefined ? missing : 'must be a string') })
    .min(1, { error: missing });
}
