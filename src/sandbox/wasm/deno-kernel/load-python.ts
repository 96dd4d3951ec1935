// How an interpreter of the WebAssembly kernel is loaded: the same Pyodide options for the
// kernel's worker (worker.ts) and for the maker of the snapshot it starts from
// (make-snapshot.ts), so that an interpreter restored from the snapshot is the one a plain load
// would give. Restoring skips CPython's start (about 4 s of CPU against 0.5 s).
import { pathOf } from './channel.ts';

/** The Pyodide API, as far as the kernel uses it. */
export interface Pyodide {
  runPython(code: string, options?: { globals?: unknown; filename?: string }): unknown;
  /** Pyodide reads element 0 and then sets it to 0 (see worker.ts takenOnce). */
  setInterruptBuffer(buffer: { 0: number }): void;
  setStdout(options: { write(buffer: Uint8Array): number; isatty?: boolean }): void;
  setStderr(options: { write(buffer: Uint8Array): number; isatty?: boolean }): void;
  makeMemorySnapshot(): Uint8Array;
  globals: { get(name: string): unknown };
}

/** `snapshot`: restore from these bytes; `forSnapshot`: load so that a snapshot can be taken. */
export async function loadPython(pyodideUrl: string, how: { snapshot?: Uint8Array; forSnapshot?: boolean } = {}): Promise<Pyodide> {
  const { loadPyodide } = (await import(new URL('pyodide.mjs', pyodideUrl).href)) as {
    loadPyodide(options: object): Promise<Pyodide>;
  };
  // Functions only: a string would be evaluated as JavaScript.
  const timers = {
    setTimeout: (callback: () => void, ms?: number) => setTimeout(functionOnly(callback), ms),
    setInterval: (callback: () => void, ms?: number) => setInterval(functionOnly(callback), ms),
    clearTimeout: (id?: number) => clearTimeout(id),
    clearInterval: (id?: number) => clearInterval(id),
  };
  const pyodide = await loadPyodide({
    // A path, not a URL: under Deno, Pyodide reads its files with the file system API.
    indexURL: pathOf(pyodideUrl),
    // What `import js` sees: the timers asyncio needs, nothing else. (stripGlobals then empties
    // the worker's global scope and takes Function away from every function's constructor.)
    jsglobals: timers,
    env: { HOME: '/home/pyodide', PYTHONHASHSEED: String(Math.floor(Math.random() * 2 ** 31)) },
    checkAPIVersion: true,
    ...(how.snapshot ? { _loadSnapshot: how.snapshot } : {}),
    ...(how.forSnapshot ? { _makeSnapshot: true } : {}),
  });
  // A restored interpreter has the snapshot's `random` state (Pyodide imports the module while it
  // starts): every session would draw the same numbers. Seed it anew from the host's entropy.
  if (how.snapshot) pyodide.runPython('import random as _random\n_random.seed()\ndel _random');
  return pyodide;
}

function functionOnly(callback: unknown): () => void {
  if (typeof callback !== 'function') throw new TypeError('a timer takes a function');
  return callback as () => void;
}
