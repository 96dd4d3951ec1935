// The kernel's Python source, read once. It sits beside this module in src/ and is copied
// beside the bundle in dist/, so the same relative URL works in both.
import { readFileSync } from 'node:fs';

let cached: Buffer | undefined;

export function kernelSource(): Buffer {
  cached ??= readFileSync(new URL('./kernel.py', import.meta.url));
  return cached;
}
