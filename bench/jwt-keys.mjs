// A platform's signing keys on 127.0.0.1 for bench/verify's JWT cases: its JWKS at /keys and
// OpenID metadata pointing there (Bot Framework), and one token signed for a run (the platforms
// reuse a token across deliveries for its hour).
import { createServer } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export async function keyServer({ endorsements } = {}) {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = {
    ...(await exportJWK(publicKey)),
    kid: 'key-1',
    alg: 'RS256',
    use: 'sig',
    ...(endorsements ? { endorsements } : {}),
  };
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/keys') res.end(JSON.stringify({ keys: [jwk] }));
    else if (req.url === '/openidconfiguration')
      res.end(JSON.stringify({ issuer: 'https://api.botframework.com', jwks_uri: `${base}/keys` }));
    else res.writeHead(404).end('{}');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    jwksUrl: `${base}/keys`,
    metadataUrl: `${base}/openidconfiguration`,
    sign: (claims, issuer, audience) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'key-1' })
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey),
  };
}
