// The WebAssembly kernel's Python source, read once: the container kernel's portable files it
// shares (errors and their hints, what a failed import leaves behind, values as text, the files left under /work/out, the stdout and
// stderr writers), then its own (deno-kernel/wasm_hints.py, then deno-kernel/kernel.py, which
// starts it), as one program in one namespace. It goes to the Deno process on stdin, where a container's kernel takes its source,
// and host.ts hands it to each interpreter: Deno reads no Python file, so it needs no permission
// for the container kernel's folder. Both folders sit beside their modules in src/ and beside the
// bundle in dist/ (esbuild.mjs copies them), so the same relative URLs work in both.
import { readFileSync } from 'node:fs';
import { joinKernelFiles, type PortableKernelFile } from '../container/kernel/source.ts';

/** The container kernel's files the WebAssembly kernel loads, in order (not plots.py: no matplotlib here; not distributions.py: no image to list). */
export const SHARED_KERNEL_FILES: readonly PortableKernelFile[] = ['hints.py', 'modules.py', 'values.py', 'files_out.py', 'streams.py'];
/** Its own, in deno-kernel/, after those. */
export const WASM_KERNEL_FILES = ['wasm_hints.py', 'kernel.py'] as const;

let cached: Buffer | undefined;
let withNetworkSet: Buffer | undefined;

/** `networkSet`: sandbox.network lets something through, so the kernel's "no network" says why there is none here. */
export function wasmKernelSource(networkSet = false): Buffer {
  cached ??= Buffer.concat([
    joinKernelFiles(SHARED_KERNEL_FILES),
    ...WASM_KERNEL_FILES.flatMap((name) => [Buffer.from('\n'), readFileSync(new URL(`./deno-kernel/${name}`, import.meta.url))]),
  ]);
  if (!networkSet) return cached;
  withNetworkSet ??= Buffer.concat([cached, Buffer.from('\n_WASM_NETWORK_SET = True\n')]);
  return withNetworkSet;
}
