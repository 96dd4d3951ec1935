// One temp folder for a whole run of the tests or the bench: the TMPDIR of this process and of
// everything it starts, removed when the process exits. What they make there (bridges' state
// dirs and workspaces, test MCP servers' files, the demo test's copy of the checkout, about 300 MB)
// would otherwise stay in the machine's temp folder after every run.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Makes the folder (`prefix` then random characters, in the temp folder) and returns it. */
export function useScratchTmp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // Open like the temp folder itself, for the tests' unprivileged user (rootless Podman, the
  // demo): anyone may add to it, and only the owner of a file may remove it.
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  process.once('exit', () => {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (error) {
      process.stderr.write(`the run's temp folder ${dir} was not removed: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  });
  return dir;
}
