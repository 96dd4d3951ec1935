// The kernel's Python source, read once: the seccomp filter's module, PID 1's reaper, the error
// hints, then the kernel, as one program (the container receives a single source over stdin,
// and again in a restart frame). The files sit beside this module in src/ and are copied beside
// the bundle in dist/, so the same relative URLs work in both.
import { readFileSync } from 'node:fs';

let cached: Buffer | undefined;

export function kernelSource(): Buffer {
  cached ??= Buffer.concat([
    readFileSync(new URL('./seccomp.py', import.meta.url)),
    Buffer.from('\n'),
    readFileSync(new URL('./pid1.py', import.meta.url)),
    Buffer.from('\n'),
    readFileSync(new URL('./hints.py', import.meta.url)),
    Buffer.from('\n'),
    readFileSync(new URL('./kernel.py', import.meta.url)),
  ]);
  return cached;
}
