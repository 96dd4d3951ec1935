// Where the run log lives in the state dir, shared by its writers (every bridge) and its reader
// (the extension): runs.jsonl, rotated to runs.1.jsonl (newest) ... runs.<keep>.jsonl (oldest),
// images beside it, and the lock that keeps rotations apart.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export const RUN_LOG_FILE = 'runs.jsonl';
export const RUN_LOG_LOCK = 'runs.lock';
export const IMAGES_DIR = 'images';

const ROTATED = /^runs\.([1-9][0-9]{0,3})\.jsonl$/;

export function rotatedLogName(n: number): string {
  return `runs.${n}.jsonl`;
}

/** Whether a file name in the state dir is part of the run log (current or rotated). */
export function isRunLogName(name: string): boolean {
  return name === RUN_LOG_FILE || ROTATED.test(name);
}

/** The log's files that exist, oldest first, ending with the current one (if present). */
export function runLogFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const rotated = names
    .flatMap((name) => {
      const match = ROTATED.exec(name);
      return match ? [{ name, n: Number(match[1]) }] : [];
    })
    .sort((a, b) => b.n - a.n)
    .map((f) => join(dir, f.name));
  return names.includes(RUN_LOG_FILE) ? [...rotated, join(dir, RUN_LOG_FILE)] : rotated;
}
