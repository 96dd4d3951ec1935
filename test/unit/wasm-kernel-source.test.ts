import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { joinKernelFiles } from '../../src/sandbox/container/kernel/source.ts';
import { SHARED_KERNEL_FILES, WASM_KERNEL_FILES, wasmKernelSource } from '../../src/sandbox/wasm/source.ts';

const files = [
  ...SHARED_KERNEL_FILES.map((name) => ({ name, text: joinKernelFiles([name]).toString('utf8') })),
  ...WASM_KERNEL_FILES.map((name) => ({
    name,
    text: readFileSync(new URL(`../../src/sandbox/wasm/deno-kernel/${name}`, import.meta.url), 'utf8'),
  })),
];

test("the WebAssembly kernel's source is its files in order, and no file defines a name another does", () => {
  assert.equal(wasmKernelSource().toString('utf8'), files.map((f) => f.text).join('\n'));
  // One namespace: a name defined again in a later file would replace the first for both.
  const check = [
    'import ast, json, sys',
    'owner, clashes = {}, []',
    'for file in json.load(sys.stdin):',
    '    for node in ast.parse(file["text"]).body:',
    '        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):',
    '            names = [node.name]',
    '        elif isinstance(node, ast.Assign):',
    '            names = [t.id for t in node.targets if isinstance(t, ast.Name)]',
    '        else:',
    '            names = []',
    '        for name in names:',
    '            if owner.setdefault(name, file["name"]) != file["name"]:',
    '                clashes.append("%s (%s, %s)" % (name, owner[name], file["name"]))',
    'print(json.dumps(clashes))',
  ].join('\n');
  assert.deepEqual(JSON.parse(execFileSync('python3', ['-c', check], { input: JSON.stringify(files), encoding: 'utf8' })), []);
});

test("the WebAssembly kernel's own error rules come before the common ones, and its frames are hidden", () => {
  // Loaded in a plain python3 as Pyodide loads it (one namespace, nothing started), then the hints installed as start() does.
  const script = [
    'import json, sys',
    'k = {"__name__": "kernel"}',
    'exec(compile(sys.stdin.read(), "<kernel>", "exec"), k)',
    'k["_install_wasm_hints"]()',
    'def error(exc):',
    '    return k["_error_of"](exc)["message"]',
    'out = {',
    '    "module": error(ModuleNotFoundError("No module named \'pandas\'", name="pandas")),',
    '    "submodule": error(ModuleNotFoundError("No module named \'a.b\'", name="a.b")),',
    '    "requests": error(ModuleNotFoundError("No module named \'requests\'", name="requests")),',
    '    "told": k["_wasm_module_hint"]("httpx", "Only Pyodide\'s standard library is installed.", False, "Reach out."),',
    '    "network": error(OSError(23, "Host is unreachable")),',
    '    "thread": error(RuntimeError("can\'t start new thread")),',
    '    "coroutine": error(TypeError("\'coroutine\' object is not subscriptable")),',
    '    "plain": error(ValueError("no")),',
    '    "hidden": [k["_frame_hidden"](f) for f in ("/lib/python3.14/asyncio/x.py", "/lib/python314.zip/json/x.py", "wasm://x", "<run-1>")],',
    '}',
    'print(json.dumps(out))',
  ].join('\n');
  const out = JSON.parse(execFileSync('python3', ['-c', script], { input: wasmKernelSource(), encoding: 'utf8' })) as Record<
    string,
    unknown
  >;
  assert.equal(
    out.module,
    "No module named 'pandas'\nOnly Pyodide's standard library is installed (the WebAssembly sandbox has no packages). Packages need the container sandbox (sandbox.packages). Instead of pandas use csv, json, statistics or sqlite3.",
  );
  // A network library: there is no network either way (the MCP runtime adds where it is instead).
  assert.match(
    out.requests as string,
    /no packages\)\. Packages need the container sandbox \(sandbox\.packages\)\. The sandbox has no network \(by design\): do not retry\.$/,
  );
  assert.equal(
    out.told,
    "Only Pyodide's standard library is installed. Packages need the container sandbox (sandbox.packages). The sandbox has no network (by design): do not retry. Reach out.",
  );
  assert.equal(out.submodule, "No module named 'a.b'");
  assert.equal(out.network, '[Errno 23] Host is unreachable\nThe sandbox has no network (by design): do not retry.');
  assert.match(out.thread as string, /^can't start new thread\nThis needs the container sandbox/);
  assert.match(out.coroutine as string, /\nThat value is a coroutine: an async function was called without await/);
  assert.equal(out.plain, 'no');
  assert.deepEqual(out.hidden, [true, true, true, false]);
});
