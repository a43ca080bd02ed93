import { z } from 'zod';

type Path = ReadonlyArray<PropertyKey>;

/**
 * One line per problem the schema found: `channels[1].apSecret (channel "wa"): unknown setting; ...`,
 * or for an unknown key the schema has no message of its own for, the setting it was likely
 * meant to be: `unknown setting "chanels": did you mean "channels"?`.
 */
export function describeIssue(
  issue: z.core.$ZodIssue,
  schema: z.ZodType,
  source: ReadonlyMap<string, string>,
  input: Record<string, unknown>,
): string[] {
  const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...issue.path, key]) : [issue.path];
  // The adapters' own message for their settings wins over a guess (it lists what they take).
  const known = issue.code === 'unrecognized_keys' ? keysAt(schema, issue.path) : undefined;
  return keys.map((parts) => {
    const path = pathText(parts);
    const channel = parts[0] === 'channels' && typeof parts[1] === 'number' ? channelIdAt(input, parts[1]) : undefined;
    const on = channel === undefined ? '' : ` (channel "${channel}")`;
    if (known) return `unknown setting "${path}"${on}${hint(parts, known)}`;
    const from = source.get(path);
    return `${path || '(root)'}${from ? ` (from ${from})` : ''}${on}: ${issue.message}`;
  });
}

/** `: did you mean "debounce.windowMs"?`, or the keys taken there when none is close. */
function hint(parts: Path, known: readonly string[]): string {
  const key = String(parts[parts.length - 1]);
  const near = closest(key, known);
  if (near !== undefined) return `: did you mean "${pathText([...parts.slice(0, -1), near])}"?`;
  const where = parts.length > 1 ? `${pathText(parts.slice(0, -1))} takes` : 'the settings are';
  return `; ${where} ${known.join(', ')}`;
}

function pathText(parts: Path): string {
  return parts
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`))
    .join('');
}

function channelIdAt(input: Record<string, unknown>, index: number): string | undefined {
  const channels = input.channels;
  const channel: unknown = Array.isArray(channels) ? channels[index] : undefined;
  return typeof channel === 'object' && channel !== null && 'id' in channel && typeof channel.id === 'string'
    ? channel.id
    : undefined;
}

/**
 * The keys of the object the schema expects at `path`, or undefined where that is not one plain
 * object (a channel entry: its adapter decides). A channel's common fields are found in any
 * adapter's entry.
 */
function keysAt(schema: z.ZodType, path: Path): string[] | undefined {
  let node: unknown = schema;
  for (const part of path) {
    node = unwrap(node);
    if (node instanceof z.ZodObject) node = fieldOfAny([node], String(part));
    else if (node instanceof z.ZodArray && typeof part === 'number') node = node.element;
    else if (node instanceof z.ZodUnion) node = fieldOfAny(node.options as unknown[], String(part));
    else return undefined;
  }
  node = unwrap(node);
  return node instanceof z.ZodObject ? Object.keys(node.shape as object) : undefined;
}

/** The schema of `key` in the first of `options` that has it. */
function fieldOfAny(options: readonly unknown[], key: string): unknown {
  for (const option of options.map(unwrap)) {
    if (option instanceof z.ZodObject && Object.hasOwn(option.shape, key))
      return (option.shape as Record<string, unknown>)[key];
  }
  return undefined;
}

function unwrap(node: unknown): unknown {
  return node instanceof z.ZodOptional ? unwrap(node.unwrap()) : node;
}

/** The known key a typo most likely meant: the fewest edits, at most a third of its length (at least one). */
export function closest(key: string, known: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(key.length / 3));
  let best: { key: string; edits: number } | undefined;
  for (const candidate of known) {
    const edits = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (edits <= limit && (!best || edits < best.edits)) best = { key: candidate, edits };
  }
  return best?.key;
}

/** Insertions, deletions, substitutions and swaps of two neighbours that turn `a` into `b` (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  let twoBack: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      let edits = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        edits = Math.min(edits, (twoBack[j - 2] as number) + 1);
      current.push(edits);
    }
    twoBack = previous;
    previous = current;
  }
  return previous[b.length] as number;
}
