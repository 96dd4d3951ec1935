// The bridge's compiled code kept between starts (Node's compile cache, Node 22.1 and newer): a
// bridge starts with V8's code for its 2 MB bundle read from disk instead of compiled again
// (about 40 ms of CPU per start, for every VS Code window and every `run`). The cache holds code
// that runs, so it lives in the user's private cache folder; anywhere else it is not used.
import { join } from 'node:path';
import { cacheDir, privateFolder } from '../shared/cache-dir.ts';

/** Turns Node's compile cache on for the modules loaded after this; quietly nothing where it cannot be. */
export function enableCompileCache(env: NodeJS.ProcessEnv = process.env): void {
  // NODE_COMPILE_CACHE (the user's own choice) or NODE_DISABLE_COMPILE_CACHE: Node's rules apply.
  if (env.NODE_COMPILE_CACHE !== undefined || env.NODE_DISABLE_COMPILE_CACHE !== undefined) return;
  const nodeModule = process.getBuiltinModule?.('node:module');
  if (typeof nodeModule?.enableCompileCache !== 'function') return;
  const parent = cacheDir(env);
  const dir = join(parent, 'node-compile-cache');
  if (!privateFolder(parent).ok || !privateFolder(dir).ok) return;
  try {
    nodeModule.enableCompileCache(dir);
  } catch {
    // A cache that cannot be used costs the compile, as without one.
  }
}
