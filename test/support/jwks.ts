import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { serve, type TestServer } from './servers.js';

/** A platform's signing keys on loopback: its JWKS at `/keys`, and OpenID metadata pointing there (Bot Framework). */
export interface KeyServer {
  server: TestServer;
  jwksUrl: string;
  metadataUrl: string;
  /** Sign a token as the platform would, with its served key (or `key`, one it does not serve). */
  sign(
    claims: JWTPayload,
    options: { issuer: string; audience: string; now: number; ttlS?: number; kid?: string; key?: CryptoKey },
  ): Promise<string>;
  /** While true, the metadata document answers 503 (the platform's side down). */
  metadataDown: boolean;
  /** A key pair the server does not serve, under a `kid` it does not know. */
  stranger(): Promise<CryptoKey>;
  close(): Promise<void>;
}

/** `endorsements`: the channels the served key vouches for, as Bot Framework's keys list them. */
export async function startKeyServer(options: { endorsements?: string[] } = {}): Promise<KeyServer> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'key-1', alg: 'RS256', use: 'sig', ...options };
  const state = { metadataDown: false };
  const server = await serve((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/openidconfiguration' && state.metadataDown) {
      res.statusCode = 503;
      res.end('{}');
    } else if (req.url === '/keys') res.end(JSON.stringify({ keys: [jwk] }));
    else if (req.url === '/openidconfiguration')
      res.end(
        JSON.stringify({ issuer: 'https://api.botframework.com', jwks_uri: `http://127.0.0.1:${server.port}/keys` }),
      );
    else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  return {
    get metadataDown() {
      return state.metadataDown;
    },
    set metadataDown(down: boolean) {
      state.metadataDown = down;
    },
    server,
    jwksUrl: `http://127.0.0.1:${server.port}/keys`,
    metadataUrl: `http://127.0.0.1:${server.port}/openidconfiguration`,
    async sign(claims, { issuer, audience, now, ttlS = 3600, kid = 'key-1', key = privateKey }) {
      const iat = Math.floor(now / 1000);
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt(iat)
        .setNotBefore(iat)
        .setExpirationTime(iat + ttlS)
        .sign(key);
    },
    async stranger() {
      return (await generateKeyPair('RS256')).privateKey;
    },
    close: () => server.close(),
  };
}

/** An unsigned token (`alg: none`): header and claims, and an empty signature. */
export function unsignedToken(claims: JWTPayload): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}
