// Snippets: Python files people saved for reuse (`<stateDir>/snippets/NAME.py`, and, when the
// configuration names it, a workspace's `.vscode/code-execution-mode/snippets/`). The module
// docstring is the description and `main(**kwargs)` (plain or async) the entry point. The host
// never runs them: it reads the leading docstring and the `def main(...)` line as text, and
// sends the source into the sandbox when `run_snippet(NAME, **kwargs)` asks for it. Folders are
// listed on each request (a saved snippet is found without a restart); a file is read again only
// when its size or modification time changed; names, sizes and counts are capped. A user's snippet wins over a workspace's of the same name.
import { createHash } from 'node:crypto';
import { closeSync, constants, writeSync } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { stemOf, wordsOf } from '../shared/words.ts';
import { ensurePrivateSubdirAsync, openPrivateFileSync, writePrivateFile } from './private-files.ts';
import { clip } from '../shared/clip.ts';

/** The `server` of snippet hits in search_tool_docs / query_tool_docs. */
export const SNIPPETS_SERVER = 'snippets';
/** A workspace's snippets folder, relative to the workspace folder. */
export const WORKSPACE_SNIPPETS_PATH = ['.vscode', 'code-execution-mode', 'snippets'] as const;
/** Identifier-like: a Python name, so `NAME.py` is also importable-looking and shell-safe. */
export const SNIPPET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_SNIPPET_BYTES = 256 * 1024;
export const MAX_SNIPPETS_PER_DIR = 500;
const MAX_DESCRIPTION_CHARS = 2000;

export type SnippetOrigin = 'user' | 'workspace';

export interface Snippet {
  name: string;
  description: string;
  /** `main(...)` as written (whitespace collapsed), when found. */
  params: string | undefined;
  isAsync: boolean;
  origin: SnippetOrigin;
  path: string;
}

export interface SnippetDir {
  dir: string;
  origin: SnippetOrigin;
}

/** Which source a snippet had: the first 16 hex digits of its SHA-256 (provenance in the run log). */
export function snippetHash(source: string): string {
  return createHash('sha256').update(source, 'utf8').digest('hex').slice(0, 16);
}

/** Where a snippet saved from a run came from: written as a comment line under its docstring. */
export interface SnippetProvenance {
  run: string;
  started: string;
  session: string;
}

/** Why a name is not a valid snippet name, or undefined when it is. */
export function snippetNameProblem(name: string): string | undefined {
  if (SNIPPET_NAME.test(name)) return undefined;
  return `"${name.slice(0, 80)}" is not a valid snippet name (letters, digits and _, not starting with a digit, at most 64 characters)`;
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '\n': '' };

/**
 * The module docstring of Python source, without running it: the first statement, when it is a
 * string literal (after comments, blank lines and an encoding line), cleaned like
 * inspect.cleandoc. Undefined when there is none.
 */
export function parseDocstring(source: string): string | undefined {
  let i = source.charCodeAt(0) === 0xfeff ? 1 : 0;
  // Blank lines and comments before the first statement.
  for (;;) {
    const m = /^[ \t\r\n\f]*/.exec(source.slice(i))!;
    i += m[0].length;
    if (source[i] === '#') {
      const end = source.indexOf('\n', i);
      if (end < 0) return undefined;
      i = end + 1;
      continue;
    }
    break;
  }
  const head = /^([rRuU]?)("""|'''|"|')/.exec(source.slice(i, i + 4));
  if (!head) return undefined;
  const raw = head[1]!.toLowerCase() === 'r';
  const quote = head[2]!;
  i += head[0].length;
  let text = '';
  for (; i < source.length; i++) {
    const c = source[i]!;
    if (source.startsWith(quote, i)) return cleandoc(text);
    if (quote.length === 1 && c === '\n') return undefined;
    if (c === '\\' && i + 1 < source.length) {
      const next = source[i + 1]!;
      if (raw) text += c + next;
      else text += ESCAPES[next] ?? c + next;
      i++;
      continue;
    }
    text += c;
  }
  return undefined;
}

/** inspect.cleandoc: tabs expanded, the first line stripped, the common indent of the rest removed. */
function cleandoc(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n').map(expandTabs);
  let indent = Infinity;
  for (const line of lines.slice(1)) {
    const stripped = line.trimStart();
    if (stripped) indent = Math.min(indent, line.length - stripped.length);
  }
  const out = [lines[0]!.trimStart(), ...lines.slice(1).map((l) => (indent === Infinity ? l : l.slice(indent)).trimEnd())];
  while (out.length > 0 && !out[0]) out.shift();
  while (out.length > 0 && !out[out.length - 1]) out.pop();
  return out.join('\n');
}

function expandTabs(line: string): string {
  let out = '';
  for (const c of line) out += c === '\t' ? ' '.repeat(8 - (out.length % 8)) : c;
  return out;
}

/** The parameters of a top-level `def main(...)` / `async def main(...)`, as written; cheap and approximate. */
export function mainSignature(source: string): { params: string; isAsync: boolean } | undefined {
  const m = /^(async[ \t]+)?def[ \t]+main[ \t]*\(/m.exec(source);
  if (!m) return undefined;
  let depth = 1;
  let i = m.index + m[0].length;
  const start = i;
  for (; i < source.length && i - start < 4000; i++) {
    const c = source[i];
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) break;
    }
  }
  if (depth !== 0) return undefined;
  const params = source
    .slice(start, i)
    .replace(/#[^\n]*/g, '')
    .replace(/\s+/g, ' ')
    .replace(/\s*,\s*$/, '')
    .trim()
    .replace(/\( /g, '(')
    .replace(/ \)/g, ')');
  return { params, isAsync: Boolean(m[1]) };
}

/** The snippet folders of a configuration: the user's, then the workspace's when configured. */
export function snippetDirs(stateDir: string, workspaceSnippetsDir: string | undefined): SnippetDir[] {
  const dirs: SnippetDir[] = [{ dir: join(stateDir, 'snippets'), origin: 'user' }];
  if (workspaceSnippetsDir) dirs.push({ dir: workspaceSnippetsDir, origin: 'workspace' });
  return dirs;
}

/** Sources kept in the cache, in all (the parsed descriptions are always kept). */
const MAX_CACHED_SOURCE_BYTES = 8 * 1024 * 1024;

/** A snippet file as last read: known unchanged while its size and modification time are. */
interface CachedSnippet {
  size: number;
  mtimeMs: number;
  snippet: Snippet;
  source: string | undefined;
}

export class SnippetStore {
  private readonly dirs: readonly SnippetDir[];
  /** Parsed snippets by path, so that a search does not read every file again. */
  private readonly cache = new Map<string, CachedSnippet>();
  private cachedSourceBytes = 0;

  constructor(dirs: readonly SnippetDir[]) {
    this.dirs = dirs;
  }

  /** Every readable snippet, by name (the first folder's wins); bad files are skipped. */
  async list(): Promise<Snippet[]> {
    const found = new Map<string, Snippet>();
    const seen = new Set<string>();
    for (const { dir, origin } of this.dirs) {
      let names: string[];
      try {
        names = (await readdir(dir)).filter((f) => f.endsWith('.py')).sort();
      } catch {
        continue;
      }
      for (const file of names.slice(0, MAX_SNIPPETS_PER_DIR)) {
        const name = file.slice(0, -3);
        if (snippetNameProblem(name) || found.has(name)) continue;
        const path = join(dir, file);
        seen.add(path);
        const read = await this.load(path, name, origin);
        if (read) found.set(name, read.snippet);
      }
    }
    // Files gone (or no longer looked at) leave the cache.
    for (const path of this.cache.keys()) if (!seen.has(path)) this.forget(path);
    return [...found.values()];
  }

  /** One snippet with its source; throws an error that names it when it is missing or unusable. */
  async get(name: string): Promise<Snippet & { source: string }> {
    const problem = snippetNameProblem(name);
    if (problem) throw new Error(problem);
    for (const { dir, origin } of this.dirs) {
      const path = join(dir, `${name}.py`);
      const info = await lstat(path).catch(() => undefined);
      if (info?.isSymbolicLink()) throw new Error(`snippet "${name}" is a symbolic link (${path}); snippets must be regular files`);
      if (!info?.isFile()) continue;
      const size = info.size;
      if (size > MAX_SNIPPET_BYTES) throw new Error(`snippet "${name}" is too large (${size} bytes; at most ${MAX_SNIPPET_BYTES})`);
      const cached = this.cache.get(path);
      if (cached?.source !== undefined && cached.size === size && cached.mtimeMs === info.mtimeMs && cached.snippet.origin === origin) {
        return { ...cached.snippet, source: cached.source };
      }
      const read = await this.load(path, name, origin, true);
      if (read?.source === undefined) throw new Error(`snippet "${name}" cannot be read`);
      return { ...read.snippet, source: read.source };
    }
    throw new Error(`there is no snippet "${name}"`);
  }

  /** Snippets matching a query, best first: those that cover at least half of its words. */
  async search(query: string, limit: number): Promise<Snippet[]> {
    return (await this.find(query, limit)).map((s) => s.snippet);
  }

  /** The same with scores from 0 to 1: the share of the query's words a snippet has, those of its name counting fully, of its text half. */
  async find(query: string, limit: number): Promise<Array<{ snippet: Snippet; score: number }>> {
    const wanted = new Set(wordsOf(query).flatMap((w) => stemOf(w) ?? []));
    if (wanted.size === 0 || limit <= 0) return [];
    const scored: Array<{ snippet: Snippet; score: number }> = [];
    for (const snippet of await this.list()) {
      const nameStems = new Set(wordsOf(snippet.name).flatMap((w) => stemOf(w) ?? []));
      const textStems = new Set(wordsOf(`${snippet.description} ${snippet.params ?? ''}`).flatMap((w) => stemOf(w) ?? []));
      let score = 0;
      let covered = 0;
      for (const w of wanted) {
        const weight = nameStems.has(w) ? 2 : textStems.has(w) ? 1 : 0;
        if (weight === 0) continue;
        score += weight;
        covered++;
      }
      if (covered * 2 >= wanted.size && covered > 0) scored.push({ snippet, score: score / (2 * wanted.size) });
    }
    return scored.sort((a, b) => b.score - a.score || a.snippet.name.localeCompare(b.snippet.name)).slice(0, limit);
  }

  /**
   * A snippet from the cache while its file's size and modification time are unchanged (one
   * lstat), else read and parsed again. `wantSource`: read even when only the source is missing.
   */
  private async load(path: string, name: string, origin: SnippetOrigin, wantSource = false): Promise<CachedSnippet | undefined> {
    const info = await lstat(path).catch(() => undefined);
    if (!info?.isFile()) {
      this.forget(path);
      return undefined;
    }
    const cached = this.cache.get(path);
    if (
      cached &&
      cached.size === info.size &&
      cached.mtimeMs === info.mtimeMs &&
      cached.snippet.origin === origin &&
      (!wantSource || cached.source !== undefined)
    )
      return cached;
    const read = await this.readFile(path);
    this.forget(path);
    if (read === undefined) return undefined;
    const bytes = Buffer.byteLength(read.text);
    const keep = this.cachedSourceBytes + bytes <= MAX_CACHED_SOURCE_BYTES;
    const entry: CachedSnippet = {
      size: read.size,
      mtimeMs: read.mtimeMs,
      snippet: describe(name, read.text, origin, path),
      source: keep ? read.text : undefined,
    };
    if (keep) this.cachedSourceBytes += bytes;
    this.cache.set(path, entry);
    return wantSource && !keep ? { ...entry, source: read.text } : entry;
  }

  private forget(path: string): void {
    const cached = this.cache.get(path);
    if (cached?.source !== undefined) this.cachedSourceBytes -= Buffer.byteLength(cached.source);
    this.cache.delete(path);
  }

  /**
   * A regular file's text, never through a symbolic link (a repository's snippets folder must
   * not hand the sandbox, and so the model, a file elsewhere such as a credentials file).
   */
  private async readFile(path: string): Promise<{ text: string; size: number; mtimeMs: number } | undefined> {
    let file: FileHandle | undefined;
    try {
      file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
      const info = await file.stat();
      if (!info.isFile() || info.size > MAX_SNIPPET_BYTES) return undefined;
      return { text: await file.readFile('utf8'), size: info.size, mtimeMs: info.mtimeMs };
    } catch {
      return undefined;
    } finally {
      await file?.close().catch(() => undefined);
    }
  }
}

function describe(name: string, source: string, origin: SnippetOrigin, path: string): Snippet {
  const doc = parseDocstring(source) ?? '';
  const main = mainSignature(source);
  return {
    name,
    description: clip(doc, MAX_DESCRIPTION_CHARS),
    params: main?.params,
    isAsync: main?.isAsync ?? false,
    origin,
    path,
  };
}

/** The dict search_tool_docs / query_tool_docs give for a snippet. */
export function snippetDoc(snippet: Snippet & { source?: string }, level: 'summary' | 'full'): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    kind: 'snippet',
    server: SNIPPETS_SERVER,
    tool: snippet.name,
    alias: snippet.name,
    description: snippet.description,
  };
  if (level === 'full') {
    doc.signature = `await run_snippet(${JSON.stringify(snippet.name)}${snippet.params ? `, ${snippet.params}` : ', **kwargs'})`;
    doc.main = snippet.params !== undefined ? `${snippet.isAsync ? 'async ' : ''}def main(${snippet.params})` : null;
    doc.returns = "main's return value";
    doc.origin = snippet.origin;
    if (snippet.source !== undefined) doc.source = snippet.source;
  }
  return doc;
}

const STATEMENT_START =
  /^(import|from|def|class|if|elif|else|for|while|with|try|except|finally|return|raise|pass|del|assert|global|nonlocal|async|await\s+asyncio\.sleep|print\s*\(|@|#|break|continue)\b/;
const ASSIGNMENT = /^[\w.[\]'", ()*]+\s*(=(?!=)|\+=|-=|\*=|\/=|\/\/=|%=|\*\*=|&=|\|=|\^=|>>=|<<=|:)/;

/**
 * A snippet file made from a run's code: the description as the module docstring and the code
 * as the body of `async def main(<params>)`; a last line that is a bare expression at the top
 * level becomes `return` (the run showed its value). A parameter the code assigns at the top
 * level on one line (`word = "x"`) takes that value as its default (unless one is given) and the
 * assignment becomes a comment, so the argument is used. The user reviews the file after saving.
 */
export function snippetSourceFromRun(description: string, code: string, params: readonly string[] = [], from?: SnippetProvenance): string {
  for (const p of params) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*(\s*=\s*[^,\n=][^,\n]*)?$/.test(p))
      throw new Error(`"${p}" is not a Python parameter (a name, or name=default)`);
  }
  const doc = description.trim().replace(/\\/g, '\\\\').replace(/"""/g, '\\"\\"\\"') || 'A saved snippet.';
  const lines = code.replace(/\r\n?/g, '\n').replace(/\s+$/, '').split('\n');
  const signature = params.map((p) => {
    const [, name, given] = /^([A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(.*))?$/.exec(p)!;
    const at = lines.findIndex((l) => new RegExp(`^${name}\\s*=(?!=)\\s*(.+)$`).test(l));
    if (at < 0) return given !== undefined ? `${name}=${given.trim()}` : name!;
    const value = /=\s*(.+)$/.exec(lines[at]!)![1]!.trim();
    const usable = !/[:\\,([{]\s*$/.test(value) && !value.includes('#');
    if (given === undefined && !usable) return name!;
    lines[at] = `# ${lines[at]}  (now a parameter of main)`;
    return `${name}=${given !== undefined ? given.trim() : value}`;
  });
  let last = lines.length - 1;
  while (last >= 0 && !lines[last]!.trim()) last--;
  const lastLine = last >= 0 ? lines[last]! : '';
  if (
    lastLine &&
    !/^\s/.test(lastLine) &&
    !STATEMENT_START.test(lastLine) &&
    !ASSIGNMENT.test(lastLine) &&
    !/[:\\,([{]\s*$/.test(lastLine)
  ) {
    lines[last] = `return ${lastLine}`;
  }
  const body = lines.some((l) => l.trim()) ? lines.map((l) => (l ? `    ${l}` : '')).join('\n') : '    return None';
  // A parameter without a default after one with a default: keyword-only ones allow that.
  const keywordOnly = signature.some((p, i) => !p.includes('=') && signature.slice(0, i).some((q) => q.includes('=')));
  // Only identifier-like values reach the comment: a run id or session name cannot end the line.
  const clean = (text: string) => text.replace(/[^\w.:+-]/g, '_').slice(0, 80);
  const origin = from
    ? `# Saved from sandbox run ${clean(from.run)} (session ${clean(from.session)}, started ${clean(from.started)}).\n`
    : '';
  return `"""${doc}"""\n${origin}\n\nasync def main(${keywordOnly ? '*, ' : ''}${signature.join(', ')}):\n${body}\n`;
}

/** Writes a snippet file readable by the user only; refuses to overwrite unless asked. */
export async function writeSnippet(dir: string, name: string, source: string, options: { overwrite?: boolean } = {}): Promise<string> {
  const problem = snippetNameProblem(name);
  if (problem) throw new Error(problem);
  if (Buffer.byteLength(source) > MAX_SNIPPET_BYTES) throw new Error(`the snippet is too large (at most ${MAX_SNIPPET_BYTES} bytes)`);
  await ensurePrivateSubdirAsync(dir);
  const path = join(dir, `${name}.py`);
  // Replaced whole (a link there is replaced, never written through); a new one never replaces.
  if (options.overwrite) await writePrivateFile(path, source);
  else {
    const fd = openPrivateFileSync(path, 'create');
    try {
      writeSync(fd, source);
    } finally {
      closeSync(fd);
    }
  }
  return path;
}
