// Two runs for any sandbox: the first is cut off by its time limit half-way through importing a
// package whose __init__ uses a submodule by the name its import bound (as asyncio's does); the
// second imports it again and reads it. A sandbox that keeps what the cut-off import left says
// "name 'first' is not defined" in the second, as asyncio said "name 'coroutines' is not defined".
const ROOT = '/tmp/cem-half-import';

/** Cut off by a time limit of a second or more: its last submodule never ends. */
export const CUT_OFF_IMPORT = [
  'import os, sys',
  `os.makedirs("${ROOT}/halfpkg", exist_ok=True)`,
  `open("${ROOT}/halfpkg/__init__.py", "w").write("from .first import *\\nfrom .second import *\\nNAMES = first.NAMES\\n")`,
  `open("${ROOT}/halfpkg/first.py", "w").write("NAMES = [1, 2]\\n")`,
  `open("${ROOT}/halfpkg/second.py", "w").write("while True:\\n    pass\\n")`,
  `sys.path.insert(0, "${ROOT}")`,
  'import halfpkg',
].join('\n');

/** In the same session: its value is `[1, 2]` when the package imports whole again. */
export const IMPORT_AGAIN = [`open("${ROOT}/halfpkg/second.py", "w").write("DONE = True\\n")`, 'import halfpkg', 'halfpkg.NAMES'].join(
  '\n',
);
