// Snippets on the host side: the docstring and main() read as text (never run), names checked,
// sizes capped, folders merged (the user's first), search, and a run turned into a snippet file.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseConfig } from '../../src/config/load.ts';
import {
  MAX_SNIPPET_BYTES,
  MAX_SNIPPETS_PER_DIR,
  SnippetStore,
  mainSignature,
  parseDocstring,
  snippetDirs,
  snippetDoc,
  snippetNameProblem,
  snippetSourceFromRun,
  writeSnippet,
} from '../../src/state/snippets.ts';

test('parseDocstring reads the leading string literal like Python does', () => {
  assert.equal(parseDocstring('"""One line."""\ndef main(): pass\n'), 'One line.');
  assert.equal(parseDocstring("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n'''Single quotes.'''\n"), 'Single quotes.');
  assert.equal(parseDocstring('"""\n    Title.\n\n    Indented body\n      more.\n    """\n'), 'Title.\n\nIndented body\n  more.');
  assert.equal(parseDocstring('"short"\n'), 'short');
  assert.equal(parseDocstring('r"""raw \\n stays"""'), 'raw \\n stays');
  assert.equal(parseDocstring('"""tab\\there \\"q\\""""'), 'tab     here "q"'); // tabs expanded, as inspect.cleandoc does
  assert.equal(parseDocstring('\ufeff"""bom"""'), 'bom');
  assert.equal(parseDocstring('import os\n"""not a docstring"""'), undefined);
  assert.equal(parseDocstring('"""never closed'), undefined);
  assert.equal(parseDocstring('"broken\n"'), undefined);
  assert.equal(parseDocstring(''), undefined);
});

test('mainSignature reads def main(...) as written, across lines, plain or async', () => {
  assert.deepEqual(mainSignature('def main(a, b=2):\n  pass'), { params: 'a, b=2', isAsync: false });
  assert.deepEqual(mainSignature('async def main(\n    query,  # what\n    limit=(1, 2),\n):\n'), {
    params: 'query, limit=(1, 2)',
    isAsync: true,
  });
  assert.deepEqual(mainSignature('def main(**kwargs): ...'), { params: '**kwargs', isAsync: false });
  assert.equal(mainSignature('def helper():\n    def main(x): pass\n'), undefined);
  assert.equal(mainSignature('x = 1'), undefined);
});

test('snippet names are identifier-like', () => {
  for (const good of ['greet', '_x', 'Fetch_2', 'a'.repeat(64)]) assert.equal(snippetNameProblem(good), undefined, good);
  for (const bad of ['', '2x', 'bad-name', 'a.b', '../etc', 'a b', 'a'.repeat(65), 'é'])
    assert.match(snippetNameProblem(bad)!, /not a valid snippet name/, bad);
});

test("the store merges folders (the user's first), skips bad names and oversized files, and searches", async () => {
  const root = await mkdtemp(join(tmpdir(), 'cem-snip-'));
  const [user, workspace] = snippetDirs(join(root, 'state'), join(root, 'ws'));
  assert.equal(user!.dir, join(root, 'state', 'snippets'));
  await mkdir(user!.dir, { recursive: true });
  await mkdir(workspace!.dir, { recursive: true });
  await writeFile(join(user!.dir, 'shared.py'), '"""Mine."""\ndef main(): return 1\n');
  await writeFile(join(workspace!.dir, 'shared.py'), '"""Theirs."""\ndef main(): return 2\n');
  await writeFile(
    join(workspace!.dir, 'weekly_report.py'),
    '"""Summarise open issues into a weekly report."""\nasync def main(repo, days=7): ...\n',
  );
  await writeFile(join(user!.dir, 'bad-name.py'), '"""x"""');
  await writeFile(join(user!.dir, 'huge.py'), `"""big"""\n#${'x'.repeat(MAX_SNIPPET_BYTES)}`);
  await writeFile(join(user!.dir, 'notes.txt'), 'not python');
  await symlink(join(user!.dir, 'shared.py'), join(workspace!.dir, 'linked.py'));
  const store = new SnippetStore([user!, workspace!]);
  const list = await store.list();
  assert.deepEqual(list.map((s) => `${s.name}:${s.origin}:${s.description}`).sort(), [
    'shared:user:Mine.',
    'weekly_report:workspace:Summarise open issues into a weekly report.',
  ]);
  assert.equal((await store.get('shared')).source, '"""Mine."""\ndef main(): return 1\n');
  await assert.rejects(store.get('huge'), /snippet "huge" is too large/);
  await assert.rejects(store.get('missing'), /there is no snippet "missing"/);
  await assert.rejects(store.get('../state/x'), /not a valid snippet name/);
  // Never read through a symbolic link (a repository could point one at a credentials file).
  await assert.rejects(store.get('linked'), /snippet "linked" is a symbolic link/);
  assert.deepEqual(
    (await store.search('weekly issue report', 5)).map((s) => s.name),
    ['weekly_report'],
  );
  assert.deepEqual(await store.search('unrelated words entirely', 5), []);
  const full = snippetDoc(await store.get('weekly_report'), 'full');
  assert.equal(full.kind, 'snippet');
  assert.equal(full.server, 'snippets');
  assert.equal(full.signature, 'await run_snippet("weekly_report", repo, days=7)');
  assert.equal(full.main, 'async def main(repo, days=7)');
  assert.deepEqual(Object.keys(snippetDoc(list[0]!, 'summary')), ['kind', 'server', 'tool', 'alias', 'description']);
});

test('a run becomes a snippet: docstring, async main with the chosen parameters, last expression returned', () => {
  const source = snippetSourceFromRun('Counts "things" """ here.', 'items = await mcp_x.list()\nlen(items) + limit', ['limit']);
  assert.equal(
    source,
    '"""Counts "things" \\"\\"\\" here."""\n\n\nasync def main(limit):\n    items = await mcp_x.list()\n    return len(items) + limit\n',
  );
  assert.equal(parseDocstring(source), 'Counts "things" """ here.');
  assert.deepEqual(mainSignature(source), { params: 'limit', isAsync: true });
  assert.match(snippetSourceFromRun('d', 'x = 1\nprint(x)'), /\n {4}print\(x\)\n$/);
  assert.match(snippetSourceFromRun('d', 'for i in range(3):\n    i'), /\n {8}i\n$/);
  assert.throws(() => snippetSourceFromRun('d', 'x', ['bad-name']), /not a Python parameter/);
  assert.throws(() => snippetSourceFromRun('d', 'x', ['a=']), /not a Python parameter/);
  assert.match(snippetSourceFromRun('d', 'x', ['query', 'limit=10']), /async def main\(query, limit=10\):/);
  // A parameter the code assigns on one top-level line takes that value as its default.
  assert.equal(
    snippetSourceFromRun('d', 'repo = "octo/cat"\ndays = 7\nx = [\n  1]\nprint(repo, days)', ['repo', 'days=14', 'x']),
    '"""d"""\n\n\nasync def main(*, repo="octo/cat", days=14, x):\n    # repo = "octo/cat"  (now a parameter of main)\n    # days = 7  (now a parameter of main)\n    x = [\n      1]\n    print(repo, days)\n',
  );
});

test('writeSnippet writes a 0600 file and does not overwrite by accident', async () => {
  const dir = join(await mkdtemp(join(tmpdir(), 'cem-snip-w-')), 'snippets');
  const path = await writeSnippet(dir, 'saved', '"""d"""\n');
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  assert.equal(await readFile(path, 'utf8'), '"""d"""\n');
  await assert.rejects(writeSnippet(dir, 'saved', 'x'), /EEXIST/);
  await writeSnippet(dir, 'saved', 'y', { overwrite: true });
  assert.equal(await readFile(path, 'utf8'), 'y');
  await assert.rejects(writeSnippet(dir, 'no/pe', 'x'), /not a valid snippet name/);
});

test('workspaceSnippetsDir is an optional config field, ~ expanded', () => {
  assert.equal(parseConfig({}).workspaceSnippetsDir, undefined);
  assert.match(
    parseConfig({ workspaceSnippetsDir: '~/ws/.vscode/code-execution-mode/snippets' }).workspaceSnippetsDir!,
    /^\/.*\/ws\/\.vscode\/code-execution-mode\/snippets$/,
  );
});

test('a folder is read up to MAX_SNIPPETS_PER_DIR files, in name order', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-snip-many-'));
  const names = Array.from({ length: MAX_SNIPPETS_PER_DIR + 5 }, (_, i) => `s${String(i).padStart(4, '0')}`);
  await Promise.all(names.map((name) => writeFile(join(dir, `${name}.py`), `"""Snippet ${name}."""\ndef main(): pass\n`)));
  const store = new SnippetStore([{ dir, origin: 'user' }]);
  const listed = (await store.list()).map((s) => s.name);
  assert.equal(listed.length, MAX_SNIPPETS_PER_DIR);
  assert.deepEqual(listed, names.slice(0, MAX_SNIPPETS_PER_DIR));
  assert.deepEqual(await store.search('s0504', 5), [], 'a file past the cap is not found');
  await rm(dir, { recursive: true, force: true });
});

test('parsed snippets are cached by path, size and modification time; a changed file is read again', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-snip-cache-'));
  const path = join(dir, 'report.py');
  await writeFile(path, '"""Weekly report AAAA."""\ndef main(): return 1\n');
  // A whole second: utimes sets it back exactly.
  const mtime = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
  await utimes(path, mtime, mtime);
  const store = new SnippetStore([{ dir, origin: 'user' }]);
  assert.equal((await store.list())[0]!.description, 'Weekly report AAAA.');
  // Same size, same modification time: the cache answers (list, search and get with its source).
  await writeFile(path, '"""Weekly report BBBB."""\ndef main(): return 2\n');
  await utimes(path, mtime, mtime);
  assert.equal((await store.list())[0]!.description, 'Weekly report AAAA.');
  assert.equal((await store.search('weekly report', 5))[0]!.description, 'Weekly report AAAA.');
  assert.match((await store.get('report')).source, /AAAA/);
  // A new modification time: read again, everywhere.
  await utimes(path, new Date(mtime.getTime() + 5000), new Date(mtime.getTime() + 5000));
  assert.equal((await store.list())[0]!.description, 'Weekly report BBBB.');
  assert.match((await store.get('report')).source, /return 2/);
  // A deleted file is gone from the cache too.
  await rm(path);
  assert.deepEqual(await store.list(), []);
  await assert.rejects(store.get('report'), /there is no snippet "report"/);
  await rm(dir, { recursive: true, force: true });
});
