/**
 * What shipped files and the tests beside them must not name: documents a user does not have
 * (the team's shared folder, its contract and seed files, another project's name) and words
 * of how the work was organised (a session of it, the people or processes in it, an internal
 * issue number). A public source is cited instead: a platform's docs URL, a public repository's
 * issue by its `owner/repo#n`, which this does not match.
 */
export const INTERNAL_REFERENCE = new RegExp(
  [
    String.raw`\.\./shared`,
    String.raw`\bCONTRACT\b`,
    String.raw`\bseeds/`,
    String.raw`\bseed \d{3}`,
    String.raw`\b[Tt]he seed(?:'s)? (?:design|example|sketch)`,
    String.raw`farm-studio`,
    String.raw`\b[Tt]his session\b`,
    String.raw`\bsessions' test runs\b`,
    String.raw`\b[Tt]he lead\b`,
    String.raw`\b[Tt]he helper\b`,
    String.raw`\bhelper (?:agent|engineer|session)s?\b`,
    String.raw`(?:^|[^\w/])[Ii]ssue #?\d`,
    String.raw`\(issue\)(?! =>)`,
    String.raw`\b[Pp]erformance issue\b`,
    String.raw`\b[Rr]ed team\b`,
    String.raw`\bdesign review\b`,
    String.raw`STYLE\.md`,
    String.raw`/work/`,
  ].join('|'),
);
