// Whether the WebAssembly sandbox can run here: its engine (Deno, this platform's binary) and
// its Python (Pyodide) are installed with the product and Deno answers. What doctor, Diagnose
// and the status bar say of it, and what to do when containers were not used.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { denoBinary, pyodideDir } from './command.ts';

export interface WasmStatus {
  ready: boolean;
  /** "Pyodide 314.0.8 in Deno 2.9.6", or what is missing. */
  detail: string;
  /** What to do when it is not ready. */
  fix?: string;
}

/** Where a person gets the stronger sandbox: said wherever the WebAssembly one is in use. */
export const CONTAINER_ADVICE =
  'for full isolation, packages and the workspace folder, install Podman (https://podman.io/docs/installation)';

/** Checks the WebAssembly sandbox (one `deno --version`, about 50 ms). Never rejects. */
export async function checkWasm(): Promise<WasmStatus> {
  let deno: string;
  let pyodide: string;
  try {
    deno = denoBinary();
    pyodide = (JSON.parse(readFileSync(join(pyodideDir(), 'package.json'), 'utf8')) as { version?: unknown }).version as string;
  } catch (error) {
    return {
      ready: false,
      detail: error instanceof Error ? error.message : String(error),
      fix: 'reinstall Code Execution Mode (npm install)',
    };
  }
  const answer = await execa(deno, ['--version'], { reject: false, timeout: 15_000, env: { DENO_NO_UPDATE_CHECK: '1' }, extendEnv: false });
  const version = /^deno (\S+)/.exec(String(answer.stdout))?.[1];
  if (answer.exitCode !== 0 || !version) {
    const why = String(answer.stderr || answer.stdout || answer.message || 'no answer')
      .trim()
      .split('\n')[0]
      ?.slice(0, 300);
    return {
      ready: false,
      detail: `Deno does not run here (${why})`,
      fix: `the WebAssembly sandbox needs Deno's binary for ${process.platform}-${process.arch}`,
    };
  }
  return { ready: true, detail: `Pyodide ${pyodide} in Deno ${version}` };
}
