// The WebAssembly sandbox's runtime as the packaged extension carries it: a .vsix has no
// node_modules, so `npm run package` copies Pyodide and this platform's Deno binary beside the
// bundle (dist/pyodide/, dist/deno/). From a checkout or npm, node_modules has them instead.
import { accessSync, chmodSync, constants, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** dist/pyodide/, when the package carries it. */
export function bundledPyodide(): string | undefined {
  const dir = fileURLToPath(new URL('./pyodide/', import.meta.url));
  return existsSync(`${dir}pyodide.mjs`) ? dir : undefined;
}

/** dist/deno/deno (deno.exe on Windows), when the package carries it; made executable if a zip lost its mode. */
export function bundledDeno(): string | undefined {
  const file = fileURLToPath(new URL(`./deno/${process.platform === 'win32' ? 'deno.exe' : 'deno'}`, import.meta.url));
  if (!existsSync(file)) return undefined;
  if (process.platform !== 'win32') {
    try {
      accessSync(file, constants.X_OK);
    } catch {
      chmodSync(file, 0o755);
    }
  }
  return file;
}
