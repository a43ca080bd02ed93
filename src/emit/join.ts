/**
 * Text merge rules. Fragments are joined with one space, except between two CJK characters,
 * where a space would be wrong: 帮我查一下 + 订单 ORD-123 + 的状态 reads 帮我查一下订单 ORD-123 的状态.
 * Hangul is left out on purpose: Korean separates words with spaces.
 */
const cjk = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u3000-\u303f\uff01-\uff60]/u;

function isCjk(char: string | undefined): boolean {
  return char !== undefined && cjk.test(char);
}

/** Join message fragments into one text. Empty fragments (media-only messages) are skipped. */
export function joinFragments(fragments: readonly string[]): string {
  let out = '';
  for (const raw of fragments) {
    const fragment = raw.trim();
    if (!fragment) continue;
    if (!out) {
      out = fragment;
      continue;
    }
    // Last code point of `out` (a surrogate pair counts as one), first of `fragment`.
    const lastChar = [...out.slice(-2)].pop();
    const firstChar = String.fromCodePoint(fragment.codePointAt(0) as number);
    out += isCjk(lastChar) && isCjk(firstChar) ? fragment : ` ${fragment}`;
  }
  return out;
}
