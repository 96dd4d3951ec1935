// Files the code writes under /work/out come back with the result, through the real bridge:
// small text inline, others as embedded resources, capped (count, size) with the cut said,
// kept beside the run log (0600), and the folder emptied after each run; hostile names shown
// escaped, never as a path outside /work/out.
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startBridge, structured, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { apiSandboxes } from '../helpers/env.ts';

type FileView = { path: string; bytes: number; text?: string; attached?: boolean; note?: string };
const filesOf = (result: CallToolResult) => (structured(result).files ?? []) as FileView[];
const resources = (result: CallToolResult) =>
  result.content.flatMap((c) =>
    c.type === 'resource' && 'blob' in c.resource ? [{ uri: c.resource.uri, mime: c.resource.mimeType, blob: c.resource.blob }] : [],
  );

for (const { label, sandbox } of apiSandboxes({ memory: '256m', timeoutSeconds: 30 })) {
  describe(`files out on ${label}`, () => {
    let bridge: BridgeHandle;
    before(async () => {
      bridge = await startBridge({ sandbox });
    });
    after(async () => {
      await bridge?.close();
    });

    test('nothing comes back when /work/out is empty', async () => {
      const result = await bridge.call('import os\nos.path.isdir("/work/out"), os.listdir("/work/out")');
      assert.equal(structured(result).value, '(True, [])');
      assert.equal(structured(result).files, undefined);
      assert.equal(resources(result).length, 0);
    });

    test('a small text file comes back inline, a binary one attached, once, and both are kept in the run log', async () => {
      const code = [
        'import os',
        'open("/work/out/summary.txt", "w").write("rows: 3\\ntotal: 42\\n")',
        'os.makedirs("/work/out/data", exist_ok=True)',
        'open("/work/out/data/blob.bin", "wb").write(bytes(range(256)) * 4)',
      ].join('\n');
      const result = await bridge.call(code);
      const files = filesOf(result);
      assert.deepEqual(
        files.map((f) => f.path),
        ['/work/out/data/blob.bin', '/work/out/summary.txt'],
      );
      const text = files.find((f) => f.path.endsWith('summary.txt'))!;
      assert.equal(text.text, 'rows: 3\ntotal: 42\n');
      assert.match(
        textOf(result),
        /\[file \/work\/out\/summary\.txt, 18 bytes\]\nrows: 3\ntotal: 42\n\[end of \/work\/out\/summary\.txt\]/,
      );
      const blob = files.find((f) => f.path.endsWith('blob.bin'))!;
      assert.equal(blob.attached, true);
      assert.equal(blob.bytes, 1024);
      const [resource] = resources(result);
      assert.equal(resource?.uri, 'sandbox:///work/out/data/blob.bin');
      assert.equal(resource?.mime, 'application/octet-stream');
      assert.deepEqual(Buffer.from(resource.blob, 'base64'), Buffer.from(new Uint8Array(1024).map((_, i) => i % 256)));
      // Kept beside the run log, private.
      const log = readFileSync(join(bridge.stateDir, 'runs.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const end = log.filter((e) => e.type === 'run-end').at(-1) as { files: Array<{ path: string; file?: string }> };
      assert.equal(end.files.length, 2);
      for (const entry of end.files) {
        const saved = join(bridge.stateDir, entry.file!);
        assert.equal(statSync(saved).mode & 0o777, 0o600);
      }
      // The folder was emptied: nothing comes back twice.
      const again = await bridge.call('import os\nos.listdir("/work/out")');
      assert.equal(structured(again).value, '[]');
      assert.equal(structured(again).files, undefined);
    });

    test('files are capped in count and size, and the cut is said', async () => {
      const code = [
        'for i in range(25):',
        '    open(f"/work/out/f{i:02}.txt", "w").write(str(i))',
        'open("/work/out/zbig.bin", "wb").write(b"x" * (5 * 1024 * 1024))',
      ].join('\n');
      const result = await bridge.call(code, { timeout: 60 });
      const files = filesOf(result);
      assert.equal(files.filter((f) => f.text !== undefined || f.attached).length, 20);
      assert.equal(files.filter((f) => /more than 20 files/.test(f.note ?? '')).length, 5);
      const big = files.find((f) => f.path === '/work/out/zbig.bin')!;
      assert.match(big.note ?? '', /not returned: over 4/);
      assert.equal(big.bytes, 5 * 1024 * 1024);
      assert.equal(structured(result).truncated, true);
      assert.match(textOf(result), /\[file \/work\/out\/f24\.txt, 2 bytes: not returned: more than 20 files\]/);
    });

    test('hostile file names are shown escaped and never as a path outside /work/out: text, URIs, run log', async () => {
      // Real names a file can have: escapes, an OSC 8 link, a line break, RTL, a Windows way up.
      const names = [
        'red\x1b[31mtext.bin',
        '\x1b]8;;https:evil.example\x07click\x1b]8;;\x07.bin',
        'line\nforged [file x].bin',
        'report\u202etxt.exe',
        '..\\..\\..\\..\\home\\user\\.bashrc',
      ];
      const cleaned = [
        'red%1B[31mtext.bin',
        '%1B]8;;https:evil.example%07click%1B]8;;%07.bin',
        'line%0Aforged [file x].bin',
        'report%E2%80%AEtxt.exe',
        '%2E%2E%5C%2E%2E%5C%2E%2E%5C%2E%2E%5Chome%5Cuser%5C.bashrc',
      ].sort();
      const result = await bridge.call(`for name in ${JSON.stringify(names)}:\n    open("/work/out/" + name, "wb").write(b"\\xff\\xfe")`);
      assert.equal(structured(result).status, 'ok', textOf(result));
      assert.deepEqual(
        filesOf(result)
          .map((f) => f.path)
          .sort(),
        cleaned.map((name) => `/work/out/${name}`),
      );
      const text = textOf(result);
      assert.doesNotMatch(text, /[\x00-\x08\x0b-\x1f\x7f\u202e\\]/u, 'no escape, control, bidi or backslash in the text');
      assert.ok(!text.split('\n').some((line) => line.startsWith('forged')), text);
      // Each file is an embedded resource whose URI stays under /work/out, whatever a reader makes of it.
      const uris = resources(result).map((r) => r.uri);
      assert.equal(uris.length, names.length);
      for (const uri of uris) {
        assert.match(uri, /^sandbox:\/\/\/work\/out\/[^/\\]+$/);
        assert.ok(new URL(uri).pathname.startsWith('/work/out/'), uri);
        assert.ok(!decodeURIComponent(uri).includes('..\\') && !decodeURIComponent(uri).includes('/..'), uri);
      }
      assert.deepEqual(uris.map((uri) => decodeURIComponent(uri.slice('sandbox:///work/out/'.length))).sort(), cleaned);
      // The run log names them the same way; the saved copies are under names of ours, with the bytes.
      const log = readFileSync(join(bridge.stateDir, 'runs.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const end = log.filter((e) => e.type === 'run-end').at(-1) as { run: string; files: Array<{ path: string; file?: string }> };
      assert.deepEqual(end.files.map((f) => f.path).sort(), cleaned);
      for (const [i, entry] of end.files.entries()) {
        assert.equal(entry.file, `images/${end.run}-out-${i}.dat`);
        assert.deepEqual(readFileSync(join(bridge.stateDir, entry.file)), Buffer.from([0xff, 0xfe]));
      }
    });
  });
}
