// What a workspace asks to run, as the user is asked about it: each server entry and each
// sandbox setting a workspace defines becomes an item with a hash of its definition and where
// it is defined, and the facts a person needs to decide (command, arguments, each environment
// variable, cwd; or URL and each header; for a sandbox setting its value and yours), with the
// values of secrets masked but named, and every character that would not show as itself
// escaped. Decisions are kept per hash, so a changed definition, or the same one in another
// workspace, is asked about again. No 'vscode' here: the rules are unit-tested.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ConsentDecisions } from '../../state/consent.ts';
import { escapeUnseen } from '../../shared/shown-text.ts';
import { plural } from '../../shared/plural.ts';
import { looksLikeToken, redactUrlSecrets, secretParameterName, URL_SECRET_MASK } from '../../config/url-secrets.ts';
import {
  CONSENT_SANDBOX_KEYS,
  settingValue,
  workspaceScope,
  type InspectedSetting,
  type SANDBOX_SETTING_KEYS,
} from './trusted-settings.ts';

export type ConsentKind = 'server' | 'sandbox';
export type Decision = 'allowed' | 'denied';

/** Where a workspace defines something: the scope and the file or folder, as an id and for people. */
export interface ConsentLocation {
  scope: 'workspace' | 'workspaceFolder';
  /** Identifies the settings file (a URI): part of the hash. */
  id: string;
  /** "workspace settings: /repo/.vscode/settings.json". */
  label: string;
}

export interface ConsentItem {
  hash: string;
  kind: ConsentKind;
  /** The server's name, or the setting (`sandbox.image`). */
  name: string;
  /** Where it is defined, for people. */
  where: string;
  /** What would run or change, one fact a line. */
  facts: string[];
}

/** A remembered decision (in the extension's global state), with what it was about. */
const decisionRecordSchema = z.object({
  decision: z.enum(['allowed', 'denied']),
  kind: z.enum(['server', 'sandbox']),
  name: z.string(),
  where: z.string(),
  facts: z.array(z.string()),
  at: z.string(),
});
export const decisionStoreSchema = z.record(z.string(), decisionRecordSchema);
export type DecisionStore = z.infer<typeof decisionStoreSchema>;

/** Keys that do not change what runs: toggling or describing a server does not ask again. */
export const NOT_HASHED: ReadonlySet<string> = new Set(['enabled', 'description']);

/** JSON with object keys sorted at every level, so equal definitions hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function consentHash(parts: unknown): string {
  return createHash('sha256').update(canonicalJson(parts)).digest('hex').slice(0, 32);
}

/** How much of one value, and of one line of facts, the question shows. */
const VALUE_CHARS = 200;
const LINE_CHARS = 1000;
/** Environment variables (or headers) listed one a line; the rest are named on one line. */
const MAX_LISTED = 30;
const MASKED = `${URL_SECRET_MASK} (secret, not shown)`;

/** A line cut to about `max` characters (never inside an escape or a character), saying how long it was. */
function cut(line: string, max: number): string {
  if (line.length <= max) return line;
  let head = '';
  for (const [token] of line.matchAll(/\\u\{[0-9A-F]+\}|\\.|[\s\S]/gu)) {
    if (head.length + token.length > max) break;
    head += token;
  }
  return `${head}… (${line.length} characters in all)`;
}

/** A word as a person would type it: quoted when it has spaces, quotes or characters that do not show (escaped). */
function shellWord(word: string): string {
  return /^[\w@%+=:,./${}~-]+$/.test(word) ? word : `"${escapeUnseen(word.replace(/[\\"]/g, '\\$&'))}"`;
}

/**
 * Whether an env variable's or header's value is (or may be) a secret: its name says so
 * (`GITHUB_TOKEN`, `API_KEY`, `DB_PASSWORD`, `Authorization`), or the value is an
 * `${input:...}`, a credential scheme or token-like (the rules URLs follow, config/url-secrets.ts).
 */
function secret(name: string, value: string): boolean {
  return (
    secretParameterName(name) || value.includes('${input:') || /^(bearer|basic|token|digest)\s+\S/i.test(value) || looksLikeToken(value)
  );
}

/** A URL with its credentials masked (user info, secret parameters, token-like path segments). */
function shownUrl(text: string): string {
  return escapeUnseen(redactUrlSecrets(text));
}

/** Each `NAME<sep>value` of an env or headers record, sorted: values shown when plain, masked when secret. */
function namedValues(record: unknown, sep: string, prefix: string): string[] {
  if (!record || typeof record !== 'object') return [];
  const entries = Object.entries(record as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const lines = entries.slice(0, MAX_LISTED).map(([name, raw]) => {
    const value = String(raw);
    const shown = secret(name, value) ? MASKED : cut(shellWord(value), VALUE_CHARS);
    return `${prefix} ${shellWord(name)}${sep}${shown}`;
  });
  const rest = entries.slice(MAX_LISTED).map(([name]) => shellWord(name));
  if (rest.length > 0) lines.push(cut(`${prefix}: ${rest.length} more, values not shown: ${rest.join(', ')}`, LINE_CHARS));
  return lines;
}

/** What a server entry runs (or reaches): values of its env or headers shown when plain, masked when secret. */
export function serverFacts(entry: Record<string, unknown>): string[] {
  const facts: string[] = [];
  if (typeof entry.url === 'string') {
    facts.push(cut(`URL: ${shownUrl(entry.url)}`, LINE_CHARS));
    facts.push(...namedValues(entry.headers, ': ', 'header'));
  } else {
    facts.push(
      cut(`command: ${shellWord(typeof entry.command === 'string' ? entry.command : JSON.stringify(entry.command ?? ''))}`, LINE_CHARS),
    );
    const args = Array.isArray(entry.args) ? entry.args.map((a) => shellWord(String(a))) : [];
    if (args.length > 0) facts.push(cut(`arguments: ${args.join(' ')}`, LINE_CHARS));
    facts.push(...namedValues(entry.env, '=', 'env'));
    if (typeof entry.cwd === 'string') facts.push(cut(`working folder: ${shellWord(entry.cwd)}`, LINE_CHARS));
  }
  if (entry.allowSelfProxy === true) facts.push('allowSelfProxy: true');
  // Turning confirmations off is part of what the user allows.
  if (entry.confirm === 'none') facts.push('confirm: none (its tools never ask you first, destructive ones included)');
  return facts;
}

/** A server entry a workspace defines (or changes). `workspaceFolder` is what `${workspaceFolder}` means. */
export function serverConsentItem(
  name: string,
  entry: Record<string, unknown>,
  location: ConsentLocation,
  workspaceFolder: string | undefined,
): ConsentItem {
  const definition = Object.fromEntries(Object.entries(entry).filter(([key]) => !NOT_HASHED.has(key)));
  return {
    hash: consentHash({ v: 1, kind: 'server', name, definition, location: location.id, workspaceFolder: workspaceFolder ?? null }),
    kind: 'server',
    name,
    where: escapeUnseen(location.label),
    facts: serverFacts(entry),
  };
}

/** A sandbox setting's value as the question shows it. */
function shownSetting(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? '(none)' : value.map((v) => shellWord(String(v))).join(' ');
  if (typeof value === 'string')
    return /^[a-z]+:\/\//i.test(value) ? shownUrl(value) : `"${escapeUnseen(value.replace(/[\\"]/g, '\\$&'))}"`;
  return escapeUnseen(JSON.stringify(value) ?? 'null');
}

/** A sandbox setting a workspace sets (`key` without the section: "sandbox.image"); `own` is the value it replaces. */
export function sandboxConsentItem(key: string, value: unknown, location: ConsentLocation, own?: unknown): ConsentItem {
  const facts = [cut(`value: ${shownSetting(value)}`, LINE_CHARS)];
  if (own !== undefined) facts.push(cut(`instead of: ${shownSetting(own)} (yours, or the default)`, LINE_CHARS));
  return {
    hash: consentHash({ v: 1, kind: 'sandbox', key, value, location: location.id }),
    kind: 'sandbox',
    name: key,
    where: escapeUnseen(location.label),
    facts,
  };
}

export type SandboxSettingKey = (typeof SANDBOX_SETTING_KEYS)[number];

/**
 * One sandbox setting as the bridge gets it. Untrusted: the user's value (settingValue). Trusted:
 * what VS Code resolved, except that a workspace value of a CONSENT_SANDBOX_KEYS setting that
 * differs from the user's (or the default) is an item to ask about, and until it is allowed the
 * user's value applies: a workspace raises no limit, and changes no image, on its own.
 */
export function sandboxSetting<T>(
  key: SandboxSettingKey,
  inspected: InspectedSetting<T> | undefined,
  trusted: boolean,
  resolved: T | undefined,
  locate: (scope: ConsentLocation['scope']) => ConsentLocation,
  decision: (hash: string) => Decision | undefined,
): { value: T | undefined; ignored: boolean; item?: ConsentItem } {
  const { value, ignored } = settingValue(inspected, trusted, resolved);
  const scope = trusted && CONSENT_SANDBOX_KEYS.includes(key) ? workspaceScope(inspected) : undefined;
  const own = inspected?.globalValue ?? inspected?.defaultValue;
  // A workspace value that changes nothing needs no question.
  if (!scope || canonicalJson(value) === canonicalJson(own)) return { value, ignored };
  const item = sandboxConsentItem(`sandbox.${key}`, value, locate(scope), own);
  return { value: decision(item.hash) === 'allowed' ? value : own, ignored, item };
}

/** Items with no "allowed" decision: what the bridge does not use yet. */
export function notAllowed(items: readonly ConsentItem[], decision: (hash: string) => Decision | undefined): ConsentItem[] {
  return items.filter((item) => decision(item.hash) !== 'allowed');
}

/** The decisions file the bridge reads. */
export function decisionsFileOf(store: DecisionStore): ConsentDecisions {
  const entries = Object.entries(store);
  return {
    version: 1,
    allowed: entries.filter(([, r]) => r.decision === 'allowed').map(([hash]) => hash),
    denied: entries.filter(([, r]) => r.decision === 'denied').map(([hash]) => hash),
  };
}

function itemTitle(item: ConsentItem): string {
  return item.kind === 'server' ? `MCP server "${item.name}"` : `setting codeExecutionMode.${item.name}`;
}

/** The question: a one-line message and the detail, item by item, of exactly what would run. */
export function questionText(items: readonly ConsentItem[]): { message: string; detail: string } {
  const servers = items.filter((i) => i.kind === 'server').length;
  const message =
    items.length === 1
      ? `This workspace wants to ${items[0]!.kind === 'server' ? 'run' : 'use'} ${itemTitle(items[0]!)}. Allow it?`
      : `This workspace wants to ${servers > 0 ? `run ${plural(servers, 'MCP server')}` : ''}${servers > 0 && servers < items.length ? ' and ' : ''}${servers < items.length ? `use ${plural(items.length - servers, 'sandbox setting')}` : ''} through Code Execution Mode. Allow ${items.length > 1 ? 'them' : 'it'}?`;
  const detail = items
    .map((item) => [`${itemTitle(item)}`, `  defined in ${item.where}`, ...item.facts.map((f) => `  ${f}`)].join('\n'))
    .join('\n\n');
  return {
    message,
    detail: `${detail}\n\nServers run on this machine with your permissions. Until you allow them, the bridge does not start them and uses your own settings for the sandbox.`,
  };
}
