// One WebAssembly sandbox: a kernel process (protocol/kernel-process.ts) that is Deno running
// Pyodide with no permission but reading its own files (command.ts says the exact line). Its
// bootstrap carries its Python source (source.ts), as a container's does; it ends by SIGKILL.
import { randomBytes } from 'node:crypto';
import type { SandboxConfig } from '../../config/schema.ts';
import { SandboxStartError } from '../errors.ts';
import { KernelProcess } from '../protocol/kernel-process.ts';
import { wasmKernelCommand } from './command.ts';
import { interpreterSnapshot } from './snapshot.ts';
import { wasmKernelSource } from './source.ts';
import { networkEnabled } from '../egress/socket-dir.ts';

/** What the WebAssembly sandbox's distributions are remembered by: its Python runtime, pinned. */
export const WASM_IMAGE_KEY = 'wasm:pyodide';

const UNITS: Record<string, number> = { b: 1 / (1024 * 1024), k: 1 / 1024, m: 1, g: 1024 };

/** sandbox.memory ("512m", "2g") in MiB, within what WebAssembly can address (64 MiB to 4 GiB). */
export function wasmMemoryMb(memory: string): number {
  const match = /^([1-9][0-9]*)([bkmg])$/i.exec(memory);
  const mb = match ? Math.floor(Number(match[1]) * (UNITS[match[2]!.toLowerCase()] ?? 1)) : 512;
  return Math.min(4096, Math.max(64, mb));
}

/** A restart is a new Pyodide (seconds, more on a loaded machine), not a new CPython (milliseconds). */
export const WASM_RESTART_TIMEOUT_MS = 60_000;

let counter = 0;

export class WasmKernel extends KernelProcess {
  private constructor(config: SandboxConfig, snapshot: string | undefined) {
    const command = wasmKernelCommand({ memoryMb: wasmMemoryMb(config.memory), snapshot });
    super(
      {
        name: `cem-wasm-${process.pid}-${++counter}-${randomBytes(3).toString('hex')}`,
        command: command.command,
        args: command.args,
        source: () => wasmKernelSource(networkEnabled(config)),
        imageKey: WASM_IMAGE_KEY,
        what: 'WebAssembly sandbox',
      },
      // Deno's own variables only: the bridge's environment holds secrets.
      command.env,
    );
  }

  override restart(timeoutMs = WASM_RESTART_TIMEOUT_MS): Promise<boolean> {
    return super.restart(timeoutMs);
  }

  /** Starts a WebAssembly kernel (from the interpreter snapshot, made first if need be) and resolves once it is ready. */
  static async start(config: SandboxConfig, startTimeoutMs = 60_000): Promise<WasmKernel> {
    const snapshot = await interpreterSnapshot();
    let kernel: WasmKernel;
    try {
      kernel = new WasmKernel(config, snapshot);
    } catch (error) {
      throw new SandboxStartError(error instanceof Error ? error.message : String(error));
    }
    return KernelProcess.launch(kernel, startTimeoutMs);
  }
}
