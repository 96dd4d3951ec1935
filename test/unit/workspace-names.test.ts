// Where workspace folders appear in the sandbox: names safe for a path and a mount option, unique.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_FOLDER_NAME_CHARS, safeFolderName, workspaceTargets } from '../../src/sandbox/engines/workspace-names.ts';

test('one folder is /workspace itself; several are /workspace/<name>, in order', () => {
  assert.deepEqual(workspaceTargets(['/home/me/project']), ['/workspace']);
  assert.deepEqual(workspaceTargets(['/home/me/app', '/srv/lib/']), ['/workspace/app', '/workspace/lib']);
  assert.deepEqual(workspaceTargets([]), []);
});

test('names are made safe: no separators, option characters, dots or dashes first', () => {
  assert.equal(safeFolderName('/x/my project (v2)'), 'my_project__v2_');
  assert.equal(safeFolderName('/x/a,b=c:d"e'), 'a_b_c_d_e');
  assert.equal(safeFolderName('/x/..'), 'folder');
  assert.equal(safeFolderName('/x/.hidden'), 'hidden');
  assert.equal(safeFolderName('/x/--rm'), 'rm');
  assert.equal(safeFolderName('/x/données'), 'donn_es');
  assert.equal(safeFolderName('/'), 'folder');
  assert.equal(safeFolderName('C:\\Users\\me\\repo'.replaceAll('\\', '/')), 'repo');
  assert.equal(safeFolderName(`/x/${'n'.repeat(300)}`).length, MAX_FOLDER_NAME_CHARS);
  for (const hostile of ['/x/a/../..', '/x/\n', '/x/ ', '/x/a\u0000b'])
    assert.match(safeFolderName(hostile), /^[A-Za-z0-9_][A-Za-z0-9._-]*$/);
});

test('names are unique, case-insensitively, whatever the folders are called', () => {
  assert.deepEqual(workspaceTargets(['/a/src', '/b/src', '/c/SRC', '/d/src-2']), [
    '/workspace/src',
    '/workspace/src-2',
    '/workspace/SRC-3',
    '/workspace/src-2-2',
  ]);
  const long = `/x/${'n'.repeat(100)}`;
  const targets = workspaceTargets([long, `${long}/`, long]);
  assert.equal(new Set(targets).size, 3);
  for (const target of targets) assert.ok(target.length <= '/workspace/'.length + MAX_FOLDER_NAME_CHARS, target);
  const many = workspaceTargets(Array.from({ length: 16 }, () => '/same'));
  assert.equal(new Set(many.map((t) => t.toLowerCase())).size, 16);
});
