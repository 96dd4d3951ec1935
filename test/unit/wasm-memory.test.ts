// sandbox.memory as the WebAssembly sandbox caps it: in MiB, within what WebAssembly can address.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wasmMemoryMb } from '../../src/sandbox/wasm/wasm-kernel.ts';

test('sandbox.memory becomes the WebAssembly cap in MiB, clamped to 64 MiB .. 4 GiB', () => {
  assert.equal(wasmMemoryMb('512m'), 512);
  assert.equal(wasmMemoryMb('2g'), 2048);
  assert.equal(wasmMemoryMb('1048576k'), 1024);
  // Below what Pyodide needs to start, and above what a 32-bit WebAssembly memory can address.
  assert.equal(wasmMemoryMb('16m'), 64);
  assert.equal(wasmMemoryMb('1000b'), 64);
  assert.equal(wasmMemoryMb('8g'), 4096);
  assert.equal(wasmMemoryMb('4G'), 4096);
});
