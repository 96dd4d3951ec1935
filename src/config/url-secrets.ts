// Credentials in URLs: the one rule for where a URL carries a secret, used to refuse such URLs
// where they would be stored (sandbox.pipIndexUrl, recorded in an image's labels) and to hide
// them wherever a URL is printed or stored (logs, errors, catalog.json, the run log).
// A URL carries a secret in:
// - its user info (`https://user:password@host/`);
// - a query or fragment parameter whose name says secret (`token`, `key`, `secret`, `password`,
//   `auth`, `signature`...);
// - a path segment that looks like a token (`https://host/mcp/a1B2c3D4e5F6g7H8/sse`).
// A value looks like a token when it begins like a well-known token (`ghp_`, `github_pat_`,
// `glpat-`, `sk-`, `xoxb-`, `AKIA`...) or holds a run of 16 or more letters and digits with
// both letters and digits in it. Where a URL is refused for carrying credentials, a parameter
// whose value looks like a token counts too; where one is printed, parameters are masked by
// name only, so that a sign-in URL (its `state` and PKCE challenge) stays whole and openable.

export const URL_SECRET_MASK = '***';

/** Parameter names that say their value is a secret. */
const SECRET_NAME = /token|key|secret|passw|passphrase|auth|credential|cookie|session|signature|^sig$|^code$|(^|[_-])pat$/i;
const TOKEN_PREFIX = /^(gh[pousr]_|github_pat_|glpat-|sk-|xox[abprs]-|AKIA|ASIA)/;
const LETTERS_AND_DIGITS = /[A-Za-z0-9]{16,}/g;

/** Whether a value (a path segment, a parameter's value) looks like a token. */
export function looksLikeToken(value: string): boolean {
  const text = decoded(value);
  if (TOKEN_PREFIX.test(text)) return true;
  return [...text.matchAll(LETTERS_AND_DIGITS)].some(([run]) => /[A-Za-z]/.test(run) && /\d/.test(run));
}

/** Whether a query or fragment parameter's name says its value is a secret. */
export function secretParameterName(name: string): boolean {
  return SECRET_NAME.test(decoded(name));
}

/** Where a URL carries credentials, in words for an error message; undefined when it carries none. */
export function urlCredentialsIn(url: URL): string | undefined {
  if (url.username || url.password) return 'a user name or password';
  const params = [...url.searchParams, ...new URLSearchParams(url.hash.slice(1))];
  const secret = params.find(([name, value]) => secretParameterName(name) || looksLikeToken(value));
  if (secret) return `the parameter "${secret[0].slice(0, 40)}"`;
  const segment = url.pathname.split('/').find(looksLikeToken);
  if (segment) return `a path segment that looks like a token ("${decoded(segment).slice(0, 4)}…")`;
  return undefined;
}

/** A URL scheme and what follows it up to a space, quote or bracket: a URL in free text. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'`<>()[\]{}\\]+/gi;

/**
 * Text with the credentials of every URL in it masked: user info, secret parameters' values and
 * token-like path segments become `***`; the rest of the text is left exactly as it was.
 */
export function redactUrlSecrets(text: string): string {
  if (!text.includes('://')) return text;
  return text.replace(URL_IN_TEXT, redactUrl);
}

function redactUrl(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)![0];
  let rest = url.slice(scheme.length);
  // The authority ends at the first "/", "?" or "#"; its last "@" ends the user info.
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const at = authority.lastIndexOf('@');
  if (at >= 0) rest = `${URL_SECRET_MASK}${rest.slice(at)}`;
  const pathStart = rest.search(/[/?#]/);
  if (pathStart < 0) return scheme + rest;
  const host = rest.slice(0, pathStart);
  const tail = rest.slice(pathStart);
  const queryStart = tail.search(/[?#]/);
  const path = queryStart < 0 ? tail : tail.slice(0, queryStart);
  const query = queryStart < 0 ? '' : tail.slice(queryStart);
  const maskedPath = path
    .split('/')
    .map((segment) => (looksLikeToken(segment) ? URL_SECRET_MASK : segment))
    .join('/');
  const maskedQuery = query.replace(/([?&#;])([^=&#;]*)=([^&#;]*)/g, (whole, sep: string, name: string) =>
    secretParameterName(name) ? `${sep}${name}=${URL_SECRET_MASK}` : whole,
  );
  return scheme + host + maskedPath + maskedQuery;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
