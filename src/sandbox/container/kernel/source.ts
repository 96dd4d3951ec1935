// The kernel's Python source, read once: its files concatenated, in order, as one program (the
// container receives a single source over stdin, and again in a restart frame). They share one
// namespace (a function may call what another file defines); kernel.py, last, starts the kernel.
// The files sit beside this module in src/ and are copied beside the bundle in dist/ (every
// .py file of this folder), so the same relative URLs work in both.
import { readFileSync } from 'node:fs';

/** The files that need nothing of the container's process: they only define names at import (no
 * descriptors, threads or signals), so another kernel may load them on its own. In order. */
// The WebAssembly kernel (sandbox/wasm/source.ts) loads hints.py, modules.py, values.py, files_out.py and streams.py too.
export const PORTABLE_KERNEL_FILES = [
  'hints.py', // errors that carry their fix
  'modules.py', // what a failed import leaves behind, forgotten after a failed run
  'values.py', // a run's error, traceback and value as text; compiling its code
  'plots.py', // matplotlib's figures as images: the backend hook, emit_figures, the dpi
  'files_out.py', // the files the code leaves under /work/out, as frames
  'distributions.py', // the image's installed distributions, for the ready frame
  'streams.py', // sys.stdout and sys.stderr: text buffered and handed on in chunks
] as const;

export type PortableKernelFile = (typeof PORTABLE_KERNEL_FILES)[number];

export const KERNEL_FILES = [
  'seccomp.py', // the seccomp filter, installed first
  'pid1.py', // PID 1's reaper
  'workspace.py', // a remote engine's workspace snapshot, extracted into /workspace
  ...PORTABLE_KERNEL_FILES,
  'egress.py', // the forwarder to the egress proxy's socket (sandbox.network), started by kernel.py
  'kernel.py', // the wire, the run, the loop: starts the kernel
] as const;

let cached: Buffer | undefined;

export function kernelSource(): Buffer {
  cached ??= joinKernelFiles(KERNEL_FILES);
  return cached;
}

/** Files of this folder, in order, joined by newlines into one program. */
export function joinKernelFiles(names: readonly string[]): Buffer {
  return Buffer.concat(
    names.flatMap((name, i) => {
      const file = readFileSync(new URL(`./${name}`, import.meta.url));
      return i ? [Buffer.from('\n'), file] : [file];
    }),
  );
}
