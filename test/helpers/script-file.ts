// A stand-in for a command (a faked runtime CLI, a wrapper around the real one): a shell script
// written from its lines and made executable.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Writes `dir/name` as `#!/bin/sh` followed by `lines`, executable; returns its path. */
export function writeScript(dir: string, name: string, lines: readonly string[]): string {
  const file = join(dir, name);
  writeFileSync(file, ['#!/bin/sh', ...lines, ''].join('\n'), { mode: 0o755 });
  chmodSync(file, 0o755);
  return file;
}
