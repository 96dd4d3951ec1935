// The rooms of src/ and which way their imports go (docs/architecture.md): a room imports only
// the rooms below it, only src/extension imports vscode, and nothing outside src/sandbox reaches
// into it but through its index.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';

const SRC = 'src';
/** What each room may import besides itself. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  config: [],
  shared: [],
  sandbox: ['config', 'shared'],
  state: ['config', 'shared', 'sandbox'],
  bridge: ['config', 'shared', 'sandbox', 'state'],
  cli: ['config', 'shared', 'sandbox', 'state', 'bridge'],
  extension: ['config', 'shared', 'sandbox', 'state', 'bridge'],
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

function imports(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!);
}

const roomOf = (file: string) => relative(SRC, file).split('/')[0]!;

test('every room of src/ is known, and imports only the rooms below it', () => {
  const wrong: string[] = [];
  for (const file of sources(SRC)) {
    const room = roomOf(file);
    assert.ok(room in MAY_IMPORT || file === join(SRC, room), `unknown room: ${room}`);
    for (const spec of imports(file)) {
      if (!spec.startsWith('.')) continue;
      const target = roomOf(normalize(join(dirname(file), spec)));
      if (target !== room && !MAY_IMPORT[room]!.includes(target)) wrong.push(`${file} -> ${spec}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('only src/extension imports vscode; outside src/sandbox, only its index is imported', () => {
  const wrong: string[] = [];
  for (const file of sources(SRC)) {
    const room = roomOf(file);
    for (const spec of imports(file)) {
      if (spec === 'vscode' && room !== 'extension') wrong.push(`${file} imports vscode`);
      if (!spec.startsWith('.') || room === 'sandbox') continue;
      const target = normalize(join(dirname(file), spec));
      if (roomOf(target) === 'sandbox' && target !== join(SRC, 'sandbox', 'index.ts')) wrong.push(`${file} -> ${spec}`);
    }
  }
  assert.deepEqual(wrong, []);
});
