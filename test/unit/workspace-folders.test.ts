// System folders as the workspace mount: /proc, /sys, /dev, /etc, /run (and /var/run), /boot and
// anything under them are refused, after following links, with the folder named and why.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultSandboxConfig } from '../../src/config/schema.ts';
import { resolveWorkspaceMounts, systemFolderOf, WorkspaceError } from '../../src/sandbox/engines/workspace.ts';

const ws = (path: string | string[]) => defaultSandboxConfig({ workspace: { path, access: 'read-only' } });

test('every system folder on this host is refused as the workspace, named with why', () => {
  const folders = ['/proc', '/sys', '/dev', '/etc', '/run', '/var/run', '/boot'].filter((dir) => existsSync(dir));
  assert.ok(folders.includes('/proc') && folders.includes('/etc'), 'the host has /proc and /etc');
  for (const dir of folders) {
    assert.throws(
      () => resolveWorkspaceMounts(ws(dir)),
      (error: unknown) =>
        error instanceof WorkspaceError &&
        /must not be a system folder or inside one/.test(error.message) &&
        error.message.includes(dir) &&
        /which (shows|holds)/.test(error.message),
      dir,
    );
  }
});

test('folders inside a system folder, and links to them, are refused too', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-ws-sys-'));
  try {
    symlinkSync('/etc', join(dir, 'etc-link'));
    symlinkSync('/proc/self', join(dir, 'proc-link'));
    for (const path of ['/proc/self', '/proc/1', '/etc/ssl', '/dev/shm', join(dir, 'etc-link'), join(dir, 'proc-link')].filter((p) =>
      existsSync(p),
    )) {
      assert.throws(() => resolveWorkspaceMounts(ws(path)), /must not be a system folder/, path);
    }
    // The real path is named when a link led there.
    assert.throws(
      () => resolveWorkspaceMounts(ws(join(dir, 'etc-link'))),
      /etc-link \(\/etc\) is in \/etc, which holds the host's configuration/,
    );
    // One system folder among several refuses the mount.
    assert.throws(() => resolveWorkspaceMounts(ws([dir, '/proc'])), /\/proc is in \/proc, which shows the host's processes/);
    // An ordinary folder still mounts.
    assert.deepEqual(resolveWorkspaceMounts(ws(dir)), [{ dir: realpathSync(dir), target: '/workspace' }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('system folders are matched by whole path segments, and Windows folders from SystemRoot', () => {
  assert.equal(systemFolderOf('/boot/grub')?.dir, '/boot');
  assert.equal(systemFolderOf('/var/run/docker.sock')?.dir !== undefined, true);
  assert.equal(systemFolderOf('/private/etc/ssh')?.dir, '/private/etc');
  assert.equal(systemFolderOf('/etcetera'), undefined);
  assert.equal(systemFolderOf('/srv/proc'), undefined);
  assert.equal(systemFolderOf('/home/me/dev'), undefined);
  // A removable drive's folder is the user's, though under /run; /run/media itself is not.
  assert.equal(systemFolderOf('/run/media/me/USB/project'), undefined);
  assert.equal(systemFolderOf('/run/media')?.dir, '/run');
  assert.equal(systemFolderOf('/run/user/1000')?.dir, '/run');
  assert.equal(systemFolderOf('/opt/win/System32', { SystemRoot: '/opt/win' })?.dir, '/opt/win');
});
