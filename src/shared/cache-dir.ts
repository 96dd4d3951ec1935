// The user's cache folder for the product: what may be made again at any time (the WebAssembly
// interpreter snapshot, the bridge's compiled code). Both are code that later runs, so a folder
// another user could write is never used.
import { lstatSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The user's cache folder for the product: CEM_CACHE_DIR, else the platform's cache location
 * (XDG_CACHE_HOME or ~/.cache, ~/Library/Caches, %LOCALAPPDATA%).
 */
export function cacheDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (env.CEM_CACHE_DIR) return env.CEM_CACHE_DIR;
  if (platform === 'darwin') return join(homedir(), 'Library', 'Caches', 'code-execution-mode');
  if (platform === 'win32') return join(env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'code-execution-mode', 'cache');
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'code-execution-mode');
}

/**
 * `dir`, made if missing (owner-only), when it is a real folder of this user that nobody else
 * may write; else why not. On Windows the folder's place (the user's own profile) is the guard.
 */
export function privateFolder(dir: string): { ok: true } | { ok: false; why: string } {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stat = lstatSync(dir);
    if (!stat.isDirectory()) return { ok: false, why: `${dir} is not a folder` };
    if (process.platform === 'win32') return { ok: true };
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return { ok: false, why: `${dir} belongs to another user` };
    if ((stat.mode & 0o022) !== 0) return { ok: false, why: `others may write ${dir}` };
    return { ok: true };
  } catch (error) {
    return { ok: false, why: (error as Error).message };
  }
}
