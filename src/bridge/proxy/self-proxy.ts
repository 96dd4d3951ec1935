// A proxied server that is this bridge again would start bridges without end. Two guards:
// entries that plainly start it are recognised (by name, by the real path of its script, and
// inside shell command lines), and every stdio server gets a depth marker in its environment,
// which a bridge started under it (however indirectly) sees: such a nested bridge starts no
// stdio servers unless the entry that led to it allowed self-proxy, and none past MAX_DEPTH.
import { realpathSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { ServerConfig, StdioServerConfig } from '../../config/schema.ts';
import { shellWords } from '../../shared/command-line.ts';

export const BRIDGE_COMMAND = 'code-execution-mode';
/** How many bridges up this one was started by a proxied server (absent: none). */
const DEPTH_ENV = 'CODE_EXECUTION_MODE_DEPTH';
/** "allowed" when the entry that started this bridge's ancestor server had allowSelfProxy. */
const NESTING_ENV = 'CODE_EXECUTION_MODE_NESTING';
/** No bridge this deep starts stdio servers, whatever its entries allow. */
export const MAX_DEPTH = 3;

const MAX_SHELL_NESTING = 4;
const SCRIPT = /\.[cm]?[jt]s$/i;

function isStdio(config: ServerConfig): config is StdioServerConfig {
  return 'command' in config;
}

/**
 * Whether a stdio entry would start this bridge again: by its command name (directly, through
 * npx and the like, any version), by the real path of this bridge's script (`dist/./cli.js`,
 * symlinks, relative to the entry's cwd), or so inside a shell command line (`sh -c "..."`,
 * `cmd /c ...`). Such entries are refused unless `allowSelfProxy`.
 */
export function startsThisBridge(config: ServerConfig, ownScript: string | undefined = process.argv[1]): boolean {
  if (!isStdio(config)) return false;
  const own = ownScript ? realPath(resolve(ownScript)) : undefined;
  return startsBridge([config.command, ...config.args], config.cwd ?? process.cwd(), own, 0);
}

function startsBridge(words: readonly string[], cwd: string, own: string | undefined, nesting: number): boolean {
  for (const raw of words) {
    // `--script=/path/cli.js` and `VAR=value`: the value counts too.
    const candidates = [raw, ...(raw.includes('=') ? [raw.slice(raw.indexOf('=') + 1)] : [])];
    for (const word of candidates) {
      if (isBridgeName(word)) return true;
      if (own && (/[\\/]/.test(word) || SCRIPT.test(word)) && samePath(realPath(resolve(cwd, word)), own)) return true;
    }
    if (nesting < MAX_SHELL_NESTING && /[\s;&|()`]/.test(raw) && startsBridge(shellWords(raw), cwd, own, nesting + 1)) return true;
  }
  return false;
}

function isBridgeName(word: string): boolean {
  const path = word.replace(/\\/g, '/');
  if (/(^|\/)node_modules\/code-execution-mode(\/|$)/i.test(path)) return true;
  const name = basename(path)
    .replace(/@[^@/]*$/, '')
    .replace(/\.(cmd|exe|ps1|bat)$/i, '')
    .toLowerCase();
  return name === BRIDGE_COMMAND;
}

function realPath(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

function samePath(a: string, b: string): boolean {
  return process.platform === 'win32' || process.platform === 'darwin' ? a.toLowerCase() === b.toLowerCase() : a === b;
}

/** This bridge's depth: 0 unless a proxied server of another bridge started it. */
export function bridgeDepth(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env[DEPTH_ENV]);
  return Number.isInteger(value) && value > 0 ? Math.min(value, 1000) : 0;
}

/** Why this bridge starts no stdio servers (it is nested), or undefined when it may. */
export function nestedRefusal(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const depth = bridgeDepth(env);
  if (depth === 0) return undefined;
  if (depth >= MAX_DEPTH) {
    return `this bridge is nested ${depth} levels deep under other Code Execution Mode bridges (${DEPTH_ENV}=${depth}); past ${MAX_DEPTH - 1} it starts no stdio servers`;
  }
  if (env[NESTING_ENV] === 'allowed') return undefined;
  return `this bridge was started by a proxied server of another Code Execution Mode bridge (${DEPTH_ENV}=${depth}), so it starts no stdio servers: they could start bridges without end (allowSelfProxy on the outer bridge's entry permits one level)`;
}

/** The marker a stdio server of this bridge gets in its environment. */
export function markerEnv(entry: ServerConfig, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return { [DEPTH_ENV]: String(bridgeDepth(env) + 1), [NESTING_ENV]: entry.allowSelfProxy ? 'allowed' : 'no' };
}
