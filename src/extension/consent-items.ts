// What a workspace asks to run, as the user is asked about it: each server entry and each
// sandbox setting a workspace defines becomes an item with a hash of its definition and where
// it is defined, and the facts a person needs to decide (command, arguments, the names but not
// the values of its environment, cwd; or URL and header names). Decisions are kept per hash,
// so a changed definition, or the same one in another workspace, is asked about again.
// No 'vscode' here: the rules are unit-tested.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ConsentDecisions } from '../bridge/hub/consent.ts';

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
export const decisionRecordSchema = z.object({
  decision: z.enum(['allowed', 'denied']),
  kind: z.enum(['server', 'sandbox']),
  name: z.string(),
  where: z.string(),
  facts: z.array(z.string()),
  at: z.string(),
});
export type DecisionRecord = z.infer<typeof decisionRecordSchema>;
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

export function consentHash(parts: unknown): string {
  return createHash('sha256').update(canonicalJson(parts)).digest('hex').slice(0, 32);
}

/** An argument as a person would type it: quoted when it has spaces or quotes. */
function shellWord(arg: string): string {
  return /^[\w@%+=:,./${}~-]+$/.test(arg) ? arg : JSON.stringify(arg);
}

function names(record: unknown): string[] {
  return record && typeof record === 'object' ? Object.keys(record).sort() : [];
}

/** What a server entry runs (or reaches), without the values of its env or headers. */
export function serverFacts(entry: Record<string, unknown>): string[] {
  const facts: string[] = [];
  if (typeof entry.url === 'string') {
    facts.push(`URL: ${entry.url}`);
    const headers = names(entry.headers);
    if (headers.length > 0) facts.push(`headers: ${headers.join(', ')} (values not shown)`);
  } else {
    facts.push(`command: ${shellWord(String(entry.command ?? ''))}`);
    const args = Array.isArray(entry.args) ? entry.args.map((a) => shellWord(String(a))) : [];
    if (args.length > 0) facts.push(`arguments: ${args.join(' ')}`);
    const env = names(entry.env);
    if (env.length > 0) facts.push(`environment: ${env.join(', ')} (values not shown)`);
    if (typeof entry.cwd === 'string') facts.push(`working folder: ${entry.cwd}`);
  }
  if (entry.allowSelfProxy === true) facts.push('allowSelfProxy: true');
  // Turning confirmations off is part of what the user allows.
  if (entry.confirm === 'none') facts.push('confirm: none (its tools never ask you first, destructive ones included)');
  return facts;
}

/** A server entry a workspace defines (or changes). `workspaceFolder` is what `${workspaceFolder}` means. */
export function serverConsentItem(name: string, entry: Record<string, unknown>, location: ConsentLocation, workspaceFolder: string | undefined): ConsentItem {
  const definition = Object.fromEntries(Object.entries(entry).filter(([key]) => !NOT_HASHED.has(key)));
  return {
    hash: consentHash({ v: 1, kind: 'server', name, definition, location: location.id, workspaceFolder: workspaceFolder ?? null }),
    kind: 'server',
    name,
    where: location.label,
    facts: serverFacts(entry),
  };
}

/** A sandbox setting a workspace sets (`key` without the section: "sandbox.image"). */
export function sandboxConsentItem(key: string, value: unknown, location: ConsentLocation): ConsentItem {
  return {
    hash: consentHash({ v: 1, kind: 'sandbox', key, value, location: location.id }),
    kind: 'sandbox',
    name: key,
    where: location.label,
    facts: [`value: ${Array.isArray(value) ? value.map((v) => shellWord(String(v))).join(' ') : JSON.stringify(value)}`],
  };
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
      : `This workspace wants to ${servers > 0 ? `run ${servers} MCP server${servers > 1 ? 's' : ''}` : ''}${servers > 0 && servers < items.length ? ' and ' : ''}${servers < items.length ? `use ${items.length - servers} sandbox setting${items.length - servers > 1 ? 's' : ''}` : ''} through Code Execution Mode. Allow ${items.length > 1 ? 'them' : 'it'}?`;
  const detail = items
    .map((item) => [`${itemTitle(item)}`, `  defined in ${item.where}`, ...item.facts.map((f) => `  ${f}`)].join('\n'))
    .join('\n\n');
  return {
    message,
    detail: `${detail}\n\nServers run on this machine with your permissions. Until you allow them, the bridge does not start them and uses your own settings for the sandbox.`,
  };
}
