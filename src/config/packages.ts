// sandbox.packages and sandbox.pipIndexUrl: what pip installs into the derived sandbox image.
// Only plain requirements from the index are accepted: a name, extras and version specifiers.
// Options (`-r`, `--index-url`, `-e`) would change what pip does; direct URLs (`name @ https://`)
// and paths would fetch from somewhere other than the one index the build is allowed to reach,
// and a path is not in the build context anyway; markers (`; python_version`) are left out so
// that every requirement is one token with nothing in it for a Containerfile or a shell.
import { urlCredentialsIn } from './url-secrets.ts';

/** Requirements in the list. */
export const MAX_PACKAGES = 64;
/** Characters of one requirement. */
export const MAX_REQUIREMENT_CHARS = 200;

const NAME = '[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?';
const EXTRAS = `\\[\\s*${NAME}(?:\\s*,\\s*${NAME})*\\s*\\]`;
const VERSION = '[A-Za-z0-9][A-Za-z0-9.*+!_-]*';
const SPECIFIER = `(?:~=|===|==|!=|<=|>=|<|>)\\s*${VERSION}`;
const REQUIREMENT = new RegExp(`^(${NAME})\\s*(${EXTRAS})?\\s*(${SPECIFIER}(?:\\s*,\\s*${SPECIFIER})*)?$`);

/** Why a requirement is refused, or undefined when it is a plain one. */
export function requirementProblem(text: string): string | undefined {
  if (text.length === 0) return 'is empty';
  if (text.length > MAX_REQUIREMENT_CHARS) return `is longer than ${MAX_REQUIREMENT_CHARS} characters`;
  if (text.trimStart().startsWith('-'))
    return 'is an option, not a package: only requirements such as "numpy" or "pandas>=2,<3" are accepted';
  if (/:\/\/|@/.test(text)) return 'is a URL: only packages from the index are installed (set sandbox.pipIndexUrl for another index)';
  if (/[/\\]/.test(text) || text.startsWith('.') || text.startsWith('~')) return 'is a path: only packages from the index are installed';
  if (text.includes(';')) return 'has an environment marker: give the plain requirement';
  if (!REQUIREMENT.test(text.trim())) return 'is not a requirement such as "numpy", "pandas>=2,<3" or "requests[socks]==2.32.3"';
  return undefined;
}

/** PEP 503's normal form of a project name: lower case, runs of "-", "_", "." as one "-". */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/**
 * One requirement in a canonical form (normalised name, sorted extras, no spaces, specifiers
 * sorted), so that the same list written differently names the same image.
 */
function normalizeRequirement(text: string): string {
  const match = REQUIREMENT.exec(text.trim());
  if (!match) return text.trim();
  const name = normalizeName(match[1]!);
  const extras = match[2]
    ? `[${match[2]
        .slice(1, -1)
        .split(',')
        .map((e) => normalizeName(e.trim()))
        .sort()
        .join(',')}]`
    : '';
  const specifiers = match[3]
    ? match[3]
        .split(',')
        .map((s) => s.replace(/\s+/g, ''))
        .sort()
        .join(',')
    : '';
  return `${name}${extras}${specifiers}`;
}

/** The list as the image records it: canonical, sorted, without duplicates. */
export function normalizePackages(packages: readonly string[]): string[] {
  return [...new Set(packages.map(normalizeRequirement))].sort();
}

/** Names only (for the listing and hints): "pandas>=2" -> "pandas". */
export function packageNames(packages: readonly string[]): string[] {
  return normalizePackages(packages).map((p) => /^[a-z0-9._-]+/.exec(p)?.[0] ?? p);
}

/** How to use an index that needs credentials, for the refusals below. */
const CREDENTIALS_FIX =
  'Fix: give the index address without credentials; for an index that needs them, run a proxy on this machine that adds them and give its address (http://127.0.0.1:PORT/simple/)';

/**
 * Why an index URL is refused, or undefined. The URL is recorded in the image's labels and build
 * history, so it carries no credentials (config/url-secrets.ts says where a URL carries them; an
 * index needs no query or fragment, so none is accepted), and plain http, which anyone on the way
 * can read and change, only reaches an index on this machine.
 */
export function indexUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (text.length > 2000) return 'is longer than 2000 characters';
  if (/\s/.test(text)) return 'must not contain spaces';
  if (url.username || url.password)
    return `must not contain a user name or password (it would be stored in the image's labels). ${CREDENTIALS_FIX}`;
  if (url.search || url.hash || /[?#]/.test(text))
    return `must not have a query (?...) or fragment (#...): tokens ride there, and the URL is stored in the image's labels. ${CREDENTIALS_FIX}`;
  const credentials = urlCredentialsIn(url);
  if (credentials)
    return `must not carry credentials: it has ${credentials}, and the URL is stored in the image's labels. ${CREDENTIALS_FIX}`;
  if (url.protocol === 'http:' && !isLoopbackUrl(text)) {
    return 'must be https: plain http is accepted only for an index on this machine (127.0.0.0/8, [::1], localhost). Fix: use the https address of the index';
  }
  return undefined;
}

/** Whether the index is on this machine: the build then needs the host's network to reach it. */
export function isLoopbackUrl(text: string): boolean {
  const host = new URL(text).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
