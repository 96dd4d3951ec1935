// Makes the snapshot the WebAssembly kernel's interpreters start from: an interpreter loaded as
// the kernel loads one (load-python.ts), with the standard modules the kernel uses imported but
// before any kernel or user code has run, its memory written to stdout. It is then restored once,
// to check that it starts, before it is written.
// The bridge (sandbox/wasm/snapshot.ts) runs it with the kernel's own permissions (reading the
// Pyodide folder and this one) and keeps the bytes in the user's cache folder.
//
//   deno run --no-prompt --allow-read=<pyodide>,<this folder> make-snapshot.ts --pyodide=<pyodide>
import { loadPython } from './load-python.ts';

const flag = Deno.args.find((arg) => arg.startsWith('--pyodide='));
if (!flag || Deno.args.length !== 1) throw new Error('usage: make-snapshot.ts --pyodide=DIR');
const dir = flag.slice('--pyodide='.length);
const url = new URL(`file://${dir.startsWith('/') ? '' : '/'}${dir.replaceAll('\\', '/')}${dir.endsWith('/') ? '' : '/'}`).href;

// The standard modules the kernel, the MCP runtime and help() (pydoc) import, imported once here
// so that each interpreter restored from the snapshot has them: without, a first run and a first
// help() spent a third of a second to seconds importing them. Pure Python: nothing of
// JavaScript is held, as a snapshot requires.
const PRELOADED = [
  'ast',
  'base64',
  'codecs',
  'difflib',
  'errno',
  'importlib.util',
  'inspect',
  'json',
  'linecache',
  'pydoc',
  'reprlib',
  'shutil',
  'stat',
  'textwrap',
  'traceback',
  'types',
  'warnings',
];
const maker = await loadPython(url, { forSnapshot: true });
maker.runPython(`import ${PRELOADED.join(', ')}`);
const snapshot = maker.makeMemorySnapshot();
const restored = await loadPython(url, { snapshot });
if (restored.runPython('1 + 1') !== 2) throw new Error('an interpreter restored from the snapshot does not compute');
for (let view = snapshot; view.length > 0;) view = view.subarray(await Deno.stdout.write(view));
