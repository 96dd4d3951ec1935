// How to start the WebAssembly kernel (deno-kernel/host.ts) as a process that speaks the
// container kernel's protocol: the Deno binary the `deno` package installed for this platform,
// the Pyodide folder of the `pyodide` package, and the only permission the process gets,
// reading those two folders (its Python comes on stdin: source.ts). The Deno programs sit in
// deno-kernel/ beside this module in src/ and beside the bundle in dist/, so the same relative
// URL works in both.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundledDeno, bundledPyodide } from './bundled.ts';

/** The default cap on a session's WebAssembly memory (Python's heap), as sandbox.memory's default. */
export const DEFAULT_WASM_MEMORY_MB = 512;
/**
 * Beyond the WebAssembly cap, V8's heap limit for each of the process's JavaScript heaps: above
 * the process's own memory watch (host.ts, the cap plus 512 MB), which ends an interpreter that
 * makes too many JavaScript objects before V8 would end the whole process.
 */
const JS_HEAP_HEADROOM_MB = 768;

/**
 * How much a WebAssembly function runs before V8 optimizes it: 14 times V8's default. Restoring
 * an interpreter runs much code once, which V8 otherwise optimized in the background for
 * nothing (a start and one run: 1.43 s of CPU, 1.13 s with this); code that loops is
 * optimized a fraction of a second later, as fast after (docs/wasm.md).
 */
const WASM_TIERING_BUDGET = 180_000_000;

export interface WasmKernelCommand {
  command: string;
  args: string[];
  /** Variables for Deno itself (the program reads none): no update check, no package.json. */
  env: Record<string, string>;
}

const require = createRequire(import.meta.url);

/** The package that carries Deno's binary for this platform (the `deno` package's optional dependencies). */
export function denoPackage(platform: NodeJS.Platform = process.platform, arch: string = process.arch): string {
  const target = platform === 'linux' ? `linux-${arch}-glibc` : `${platform}-${arch}`;
  return `@deno/${target}`;
}

export function denoBinary(): string {
  const bundled = bundledDeno();
  if (bundled) return bundled;
  const name = denoPackage();
  try {
    return join(dirname(require.resolve(`${name}/package.json`)), process.platform === 'win32' ? 'deno.exe' : 'deno');
  } catch {
    throw new Error(
      `The WebAssembly sandbox needs Deno's binary for ${process.platform}-${process.arch} (npm package ${name}), and it is not installed: ` +
        'run npm install where Code Execution Mode is installed, or use the container sandbox (sandbox.backend "container").',
    );
  }
}

export function pyodideDir(): string {
  return bundledPyodide() ?? dirname(require.resolve('pyodide/package.json'));
}

/** The folder of the kernel's Deno programs (and of its own Python files, which the bridge reads). */
export function kernelDir(): string {
  return fileURLToPath(new URL('./deno-kernel/', import.meta.url));
}

/**
 * The command line of one WebAssembly kernel process, its memory capped at `memoryMb`. Its stdin and stdout carry the container
 * kernel's bootstrap and frames; its stderr says why it could not start or why an interpreter ended.
 */
export function wasmKernelCommand(options: { memoryMb?: number; spare?: boolean; snapshot?: string } = {}): WasmKernelCommand {
  const pyodide = pyodideDir();
  const kernel = kernelDir();
  const memoryMb = options.memoryMb ?? DEFAULT_WASM_MEMORY_MB;
  return {
    command: denoBinary(),
    args: [
      'run',
      // No permission is ever asked for: what is not granted here is refused.
      '--no-prompt',
      // Read the two folders (and the interpreter snapshot, snapshot.ts), nothing else (no
      // --allow-net, -env, -run, -write, -ffi, -sys, -import).
      `--allow-read=${[pyodide, kernel, ...(options.snapshot ? [options.snapshot] : [])].join(',')}`,
      // The worker gets its own permissions, so it can drop even these reads once Python is loaded.
      '--unstable-worker-options',
      `--v8-flags=--max-old-space-size=${memoryMb + JS_HEAP_HEADROOM_MB},--wasm-tiering-budget=${WASM_TIERING_BUDGET}`,
      // Never a deno.json or lock file of the folder it runs in.
      '--no-config',
      '--no-lock',
      join(kernel, 'host.ts'),
      `--pyodide=${pyodide}`,
      `--memory-mb=${memoryMb}`,
      // A second interpreter kept started: a restart (reset, code that ignores its interrupt)
      // takes milliseconds instead of a start, for the memory of one more interpreter.
      ...(options.spare ? ['--spare'] : []),
      ...(options.snapshot ? [`--snapshot=${options.snapshot}`] : []),
    ],
    env: { DENO_NO_UPDATE_CHECK: '1', DENO_NO_PACKAGE_JSON: '1' },
  };
}
