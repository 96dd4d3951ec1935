// Finds a container runtime's executable. VS Code started from the macOS Dock or the Windows
// Start menu often has a short PATH that lacks where Podman and Docker install, so after PATH
// the well-known install folders of each OS are searched; a configured path wins over both.
import { accessSync, constants, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import type { RuntimeName } from '../../config/schema.ts';

export interface LocateOptions {
  /** An explicit executable (from settings); used as is when given. */
  configured?: string;
  /** PATH to search; defaults to the process's. */
  path?: string;
  /** Install folders searched after PATH; defaults to this OS's well-known ones. */
  searchDirs?: readonly string[];
  platform?: NodeJS.Platform;
}

export interface Located {
  /** What to run: an absolute path, or the bare name when nothing was found (the CLI reports it). */
  command: string;
  found: 'configured' | 'path' | 'install-dir' | 'none';
}

/** Where Podman and Docker put their CLIs outside the usual PATH, per OS. */
function wellKnownDirs(platform: NodeJS.Platform = process.platform, home = homedir()): string[] {
  if (platform === 'darwin') {
    return [
      '/opt/homebrew/bin',
      '/usr/local/bin',
      join(home, '.docker', 'bin'),
      '/opt/podman/bin',
      join(home, '.rd', 'bin'),
      '/Applications/Docker.app/Contents/Resources/bin',
      '/opt/local/bin',
    ];
  }
  if (platform === 'win32') {
    const programFiles = process.env.ProgramFiles ?? 'C:\\Program Files';
    return [
      join(programFiles, 'RedHat', 'Podman'),
      join(programFiles, 'Docker', 'Docker', 'resources', 'bin'),
      join(home, '.rd', 'bin'),
      join(home, 'AppData', 'Local', 'Programs', 'Rancher Desktop', 'resources', 'resources', 'win32', 'bin'),
    ];
  }
  return [
    '/usr/local/bin',
    '/usr/bin',
    '/bin',
    '/snap/bin',
    join(home, '.local', 'bin'),
    '/home/linuxbrew/.linuxbrew/bin',
    join(home, '.rd', 'bin'),
  ];
}

function executable(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findIn(dirs: readonly string[], name: string, platform: NodeJS.Platform): string | undefined {
  const names = platform === 'win32' ? [`${name}.exe`, `${name}.cmd`, name] : [name];
  for (const dir of dirs) {
    if (!dir || !isAbsolute(dir)) continue;
    for (const candidate of names) {
      const file = join(dir, candidate);
      if (executable(file)) return file;
    }
  }
  return undefined;
}

export function locateRuntime(name: RuntimeName, options: LocateOptions = {}): Located {
  if (options.configured) return { command: options.configured, found: 'configured' };
  const platform = options.platform ?? process.platform;
  const onPath = findIn((options.path ?? process.env.PATH ?? '').split(delimiter), name, platform);
  if (onPath) return { command: onPath, found: 'path' };
  const installed = findIn(options.searchDirs ?? wellKnownDirs(platform), name, platform);
  if (installed) return { command: installed, found: 'install-dir' };
  return { command: name, found: 'none' };
}
