// Credentials in URLs: masked wherever a URL is printed or stored (user info, parameters named
// like secrets, token-like path segments), the rest of the text left as it was.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { looksLikeToken, redactUrlSecrets, urlCredentialsIn } from '../../src/config/url-secrets.ts';
import { redactor } from '../../src/bridge/proxy/stderr.ts';
import { ToolCatalog } from '../../src/bridge/catalog/catalog.ts';

test('user info of every URL in a text is masked, whatever the scheme or the text around it', () => {
  assert.equal(
    redactUrlSecrets(
      'SSE error: Request cannot be constructed from a URL that includes credentials: http://alice:S3cretPassw0rd@127.0.0.1:9/mcp',
    ),
    'SSE error: Request cannot be constructed from a URL that includes credentials: http://***@127.0.0.1:9/mcp',
  );
  assert.equal(redactUrlSecrets('"https://user:p@ss@host.example/x" and wss://bob@h/'), '"https://***@host.example/x" and wss://***@h/');
  assert.equal(redactUrlSecrets('{"url":"https://u:pw@h/mcp"}'), '{"url":"https://***@h/mcp"}');
  assert.equal(redactUrlSecrets('https://alice:pw@h'), 'https://***@h');
  // An "@" after the host is a path, not user info.
  assert.equal(redactUrlSecrets('https://h.example/@scope/pkg'), 'https://h.example/@scope/pkg');
});

test('parameters named like secrets and token-like path segments are masked; the rest is kept as written', () => {
  assert.equal(
    redactUrlSecrets('GET https://api.example/mcp?token=abc&mode=fast&api_key=k1&Signature=zz#access_token=t0'),
    'GET https://api.example/mcp?token=***&mode=fast&api_key=***&Signature=***#access_token=***',
  );
  assert.equal(redactUrlSecrets('https://actions.example/mcp/sk-ak-abcdef/sse'), 'https://actions.example/mcp/***/sse');
  assert.equal(redactUrlSecrets('https://h.example/v1/a1B2c3D4e5F6g7H8i9/mcp'), 'https://h.example/v1/***/mcp');
  // Nothing to hide: the text is the same, byte for byte.
  for (const text of [
    'server "docs" failed to start: fetch failed (connect ECONNREFUSED 127.0.0.1:8931) at http://127.0.0.1:8931/mcp',
    'https://login.example.com/7d3f2a1c-4b5e-4f60-9a8b-1c2d3e4f5a6b/oauth2/v2.0/authorize',
    'no url here, just words: token=abc',
  ]) {
    assert.equal(redactUrlSecrets(text), text);
  }
});

test('a sign-in URL stays whole: its state and PKCE challenge are not secrets and the person must open it', () => {
  const url =
    'https://auth.example.com/authorize?response_type=code&client_id=Abc123Def456Ghi789&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&redirect_uri=http%3A%2F%2F127.0.0.1%3A33418%2Fcallback&state=Zm9vYmFyYmF6cXV4MTIzNDU2&resource=https%3A%2F%2Fmcp.example%2Fmcp';
  assert.equal(redactUrlSecrets(`open ${url} to sign in`), `open ${url} to sign in`);
});

test('the rule: tokens by prefix or by a long mixed run of letters and digits; where a URL carries credentials', () => {
  for (const token of [
    'ghp_abc',
    'github_pat_11AB',
    'glpat-xyz',
    'sk-proj-1',
    'xoxb-1-2',
    'AKIAIOSFODNN7EXAMPLE',
    'a1B2c3D4e5F6g7H8',
    '%67hp_x',
  ])
    assert.ok(looksLikeToken(token), token);
  for (const word of [
    'simple',
    'pypi-remote',
    'python3-packages-2024',
    '7d3f2a1c-4b5e-4f60-9a8b-1c2d3e4f5a6b',
    'abcdefghijklmnopqrstuvwxyz',
    '12345678901234567890',
  ]) {
    assert.ok(!looksLikeToken(word), word);
  }
  assert.equal(urlCredentialsIn(new URL('https://u:p@h/')), 'a user name or password');
  assert.equal(urlCredentialsIn(new URL('https://h/?apiKey=1')), 'the parameter "apiKey"');
  assert.equal(urlCredentialsIn(new URL('https://h/?x=a1B2c3D4e5F6g7H8')), 'the parameter "x"');
  assert.match(urlCredentialsIn(new URL('https://h/a1B2c3D4e5F6g7H8/simple'))!, /path segment that looks like a token \("a1B2…"\)/);
  assert.equal(urlCredentialsIn(new URL('https://pypi.org/simple/')), undefined);
});

test("a server's redactor and the catalog (catalog.json, the Tools view) hide URL credentials too", () => {
  const redact = redactor(['stored-secret-value'], []);
  assert.equal(redact('stored-secret-value at https://me:hunter2@h/mcp'), '*** at https://***@h/mcp');
  const catalog = new ToolCatalog([{ name: 'web', fingerprint: 'f' }]);
  catalog.setState(
    'web',
    'error',
    'could not start: http://alice:S3cretPassw0rd@127.0.0.1:9/mcp',
    'failed: http://alice:S3cretPassw0rd@127.0.0.1:9/mcp?token=abc',
  );
  const record = catalog.get('web')!;
  assert.doesNotMatch(JSON.stringify(record), /S3cretPassw0rd|token=abc/);
  assert.match(record.error ?? '', /http:\/\/\*\*\*@127\.0\.0\.1:9\/mcp/);
});
