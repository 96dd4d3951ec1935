// Where each mounted workspace folder appears in the sandbox: a single folder at /workspace,
// several at /workspace/<name>. Names come from the folders' own names, made safe for a path
// and for the runtimes' mount options (letters, digits, ".", "_", "-"; never "." or ".."), and
// unique (case-insensitively, so they stay distinct on any file system they are copied to).
// Pure: the listing computes the same names from the configuration without touching the disk.
import { basename } from 'node:path';

export const WORKSPACE_DIR = '/workspace';
/** Characters of a folder's name under /workspace. */
export const MAX_FOLDER_NAME_CHARS = 64;
/** What a folder whose name has nothing usable is called. */
const FALLBACK_NAME = 'folder';

/** A folder's name made safe: other characters become "_", no leading dots or dashes, capped. */
export function safeFolderName(path: string): string {
  const name = basename(path.replace(/[\\/]+$/, ''))
    .normalize('NFC')
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^[.-]+/, '')
    .slice(0, MAX_FOLDER_NAME_CHARS);
  return name || FALLBACK_NAME;
}

/** The mount point of each folder, in order: /workspace for one, /workspace/<unique name> for several. */
export function workspaceTargets(paths: readonly string[]): string[] {
  if (paths.length === 1) return [WORKSPACE_DIR];
  const used = new Set<string>();
  return paths.map((path) => {
    const base = safeFolderName(path);
    let name = base;
    for (let n = 2; used.has(name.toLowerCase()); n++) {
      const suffix = `-${n}`;
      name = base.slice(0, MAX_FOLDER_NAME_CHARS - suffix.length) + suffix;
    }
    used.add(name.toLowerCase());
    return `${WORKSPACE_DIR}/${name}`;
  });
}
