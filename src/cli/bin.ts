// The `code-execution-mode` executable. It only checks the Node.js version, then loads the
// real command (a separate bundle), so that old Node gets one clear line instead of a crash.
import { enableCompileCache } from './compile-cache.ts';
import { nodeTooOld } from './node-version.ts';

const tooOld = nodeTooOld(process.version);
if (tooOld) {
  process.stderr.write(`${tooOld}\n`);
  process.exitCode = 1;
} else {
  enableCompileCache();
  // The real command is a separate bundle beside this file (see esbuild.mjs).
  const main = './cli-main.js';
  void import(main);
}
