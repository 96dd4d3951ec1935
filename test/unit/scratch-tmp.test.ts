import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { execa } from 'execa';

test("a run's temp folder is everything's TMPDIR and goes when the run exits", async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'cem-scratch-'));
  t.after(() => rm(base, { recursive: true, force: true }));
  // A run that has a folder and a child process's file in its temp folder, then exits.
  const run = [
    `import { useScratchTmp } from ${JSON.stringify(pathToFileURL(resolve('scripts/scratch-tmp.ts')).href)};`,
    "import { execFileSync } from 'node:child_process';",
    "import { existsSync, mkdtempSync, statSync } from 'node:fs';",
    "import { tmpdir } from 'node:os';",
    "const dir = useScratchTmp('cem-run-');",
    "mkdtempSync(dir + '/cem-bridge-');",
    'execFileSync(process.execPath, [\'-e\', \'fs.writeFileSync(os.tmpdir() + "/child", "x")\']);',
    'const mode = (statSync(dir).mode & 0o7777).toString(8);',
    "console.log(JSON.stringify({ dir, tmp: tmpdir(), child: existsSync(dir + '/child'), mode }));",
  ].join('\n');
  const out = await execa(process.execPath, ['--input-type=module', '-e', run], { env: { TMPDIR: base } });
  const seen = JSON.parse(out.stdout) as { dir: string; tmp: string; child: boolean; mode: string };
  assert.equal(seen.tmp, seen.dir, 'the process itself uses it');
  assert.ok(seen.dir.startsWith(join(base, 'cem-run-')), seen.dir);
  assert.equal(seen.child, true, 'a child process wrote into it');
  assert.equal(seen.mode, '1777');
  assert.equal(existsSync(seen.dir), false, 'removed at exit, with what was in it');
  assert.ok((await stat(base)).isDirectory());
});
