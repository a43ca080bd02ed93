import { createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey, type JWTVerifyResult } from 'jose';
import type { ChannelConfig } from '../../config/schema.js';
import { SignatureError, StaleTimestampError, UnavailableError } from '../../core/errors.js';
import { headerOf, type RawDelivery } from './types.js';

/**
 * How far the sender's clock may be from ours when a token's `exp`, `nbf` and `iat` are read:
 * Bot Framework allows 5 minutes (learn.microsoft.com/azure/bot-service/rest-api/bot-framework-rest-connector-authentication),
 * and Google's libraries as much.
 */
export const JWT_SKEW_S = 300;

/**
 * How long a captured request passes the token check, counted from its first arrival: Google
 * Chat and Bot Framework issue their tokens for an hour, and the skew lets one pass up to 5 min
 * before its `nbf`/`iat` and after its `exp`. The exact-id window is at least this, so a replay
 * of a message inside it is a duplicate.
 */
export const JWT_REPLAY_HORIZON_MS = (3600 + 2 * JWT_SKEW_S) * 1000;

/** The keys a token is checked against: a JWKS URL, or a lookup that finds it first (Bot Framework's OpenID metadata). */
export type KeySource = JWTVerifyGetKey;

/** What one channel's bearer tokens must say. */
export interface BearerRule {
  issuer: string | string[];
  audience: string;
  /** The platform's name in messages: `Google Chat`, `Bot Framework`. */
  platform: string;
  /** @default ['RS256'] */
  algorithms?: string[];
}

/**
 * A JWKS fetched on first use and kept: jose's `createRemoteJWKSet` caches the keys and fetches
 * them again when a token names a `kid` it does not hold (a key rotated in), at most once every
 * 30 s, so a flood of made-up `kid`s costs one fetch.
 */
export function remoteKeys(url: string): KeySource {
  return createRemoteJWKSet(new URL(url), { timeoutDuration: 5000 });
}

/**
 * The keys named by an OpenID Connect metadata document (Bot Framework's): the document is
 * fetched on first use for its `jwks_uri`, whose keys are then held as `remoteKeys` holds them.
 * A failed fetch is forgotten, so the next request tries again.
 */
export function openIdKeys(metadataUrl: string): KeySource & { endorsements(kid: unknown): string[] | undefined } {
  let remote: ReturnType<typeof createRemoteJWKSet> | undefined;
  let keys: Promise<KeySource> | undefined;
  const discover = async (): Promise<KeySource> => {
    const response = await fetch(metadataUrl, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) throw new Error(`${metadataUrl} answered ${response.status}`);
    const metadata = (await response.json()) as { jwks_uri?: unknown };
    if (typeof metadata.jwks_uri !== 'string') throw new Error(`${metadataUrl} names no jwks_uri`);
    remote = createRemoteJWKSet(new URL(metadata.jwks_uri), { timeoutDuration: 5000 });
    return remote;
  };
  const source: KeySource = async (header, token) => {
    keys ??= discover().catch((error: unknown) => {
      keys = undefined;
      throw error;
    });
    return (await keys)(header, token);
  };
  return Object.assign(source, {
    /** The channels a key vouches for (Bot Framework `endorsements`), when it lists any. */
    endorsements(kid: unknown): string[] | undefined {
      const key = remote?.jwks()?.keys.find((candidate) => candidate.kid === kid) as
        { endorsements?: unknown } | undefined;
      return Array.isArray(key?.endorsements)
        ? key.endorsements.filter((e): e is string => typeof e === 'string')
        : undefined;
    },
  });
}

/**
 * Check the `Authorization: Bearer <JWT>` of a delivery: signature by one of the keys (RS256
 * only, so `alg: none` and an HMAC keyed with a public key never pass), issuer, audience, and
 * expiry at the delivery's receive time with `JWT_SKEW_S` of skew. Throws the 401 that says
 * what was wrong, or a 503 when the keys cannot be fetched (the platform retries). Resolves to
 * the token's claims and header.
 */
export async function verifyBearer(
  channel: ChannelConfig,
  delivery: RawDelivery,
  keys: KeySource,
  rule: BearerRule,
): Promise<Pick<JWTVerifyResult, 'payload' | 'protectedHeader'>> {
  const context = { channel: channel.id, stage: 'adapter' };
  const header = headerOf(delivery, 'authorization');
  const token = /^Bearer +(\S+)$/i.exec(header ?? '')?.[1];
  if (!token)
    throw new SignatureError(
      `Signature missing on channel "${channel.id}": an Authorization: Bearer <JWT> header from ${rule.platform} is required`,
      context,
    );
  // The platforms send one token with many deliveries for its hour: one signature check each.
  let verified = verifiedTokens.get(keys);
  if (!verified) verifiedTokens.set(keys, (verified = new Map()));
  const known = verified.get(token);
  if (known && stillValid(known.payload, delivery.now)) return known;
  try {
    const result = await jwtVerify(token, keys, {
      issuer: rule.issuer,
      audience: rule.audience,
      algorithms: rule.algorithms ?? ['RS256'],
      clockTolerance: JWT_SKEW_S,
      currentDate: new Date(delivery.now),
      requiredClaims: ['exp'],
    });
    const kept = { payload: result.payload, protectedHeader: result.protectedHeader };
    verified.delete(token);
    verified.set(token, kept);
    if (verified.size > VERIFIED_TOKENS) verified.delete(verified.keys().next().value as string);
    return kept;
  } catch (error) {
    throw refusal(channel, rule, error);
  }
}

/** Tokens a channel's keys verified, kept per channel (the newest VERIFIED_TOKENS) until they expire. */
const verifiedTokens = new WeakMap<KeySource, Map<string, Pick<JWTVerifyResult, 'payload' | 'protectedHeader'>>>();
const VERIFIED_TOKENS = 1000;

/** A token verified before, at `now` (ms): within its `exp` and `nbf`, with the same skew as the first check. */
function stillValid(payload: JWTVerifyResult['payload'], now: number): boolean {
  const at = now / 1000;
  return (
    typeof payload.exp === 'number' &&
    payload.exp + JWT_SKEW_S > at &&
    (typeof payload.nbf !== 'number' || payload.nbf - JWT_SKEW_S <= at)
  );
}

function refusal(channel: ChannelConfig, rule: BearerRule, error: unknown): Error {
  const context = { channel: channel.id, stage: 'adapter', cause: error };
  const mismatch = (what: string) =>
    new SignatureError(`Signature mismatch on channel "${channel.id}": the ${rule.platform} token ${what}`, context);
  if (error instanceof errors.JWTExpired)
    return new StaleTimestampError(
      `Stale timestamp on channel "${channel.id}": the ${rule.platform} token expired (exp), more than the ${JWT_SKEW_S} s allowed ago`,
      context,
    );
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss')
      return mismatch(`was issued by someone else (iss is not ${JSON.stringify(rule.issuer)})`);
    if (error.claim === 'aud') return mismatch(`is for another audience (aud is not ${JSON.stringify(rule.audience)})`);
    return mismatch(`has a bad "${error.claim}" claim: ${error.reason}`);
  }
  if (error instanceof errors.JWKSNoMatchingKey)
    return mismatch(`is signed with a key (kid) that is not among the platform's keys, even after fetching them again`);
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported)
    return mismatch(
      `is not signed with ${(rule.algorithms ?? ['RS256']).join(' or ')} (an unsigned "alg": "none" token never passes)`,
    );
  if (error instanceof errors.JWSSignatureVerificationFailed) return mismatch('signature does not verify');
  if (
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    !(error instanceof errors.JOSEError)
  )
    return new UnavailableError(
      'unavailable',
      `The ${rule.platform} signing keys of channel "${channel.id}" cannot be fetched: ${error instanceof Error ? error.message : String(error)}`,
      30,
      { channel: channel.id, stage: 'adapter', cause: error },
    );
  return mismatch(`is not a valid JWT: ${error.message}`);
}
