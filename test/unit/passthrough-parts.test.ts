// The pure parts of the MCP passthrough: error messages said once, results with audio,
// annotations and error structured content, and relayed progress messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bareErrorMessage } from '../../src/bridge/proxy/connection.ts';
import { toolProgressMessage } from '../../src/bridge/tool/progress.ts';
import { toSandboxResult } from '../../src/bridge/results/tool-results.ts';

test('a JSON-RPC error message loses the prefixes the SDK adds on each side', () => {
  assert.equal(bareErrorMessage('MCP error -32042: MCP error -32042: sign in'), 'sign in');
  assert.equal(bareErrorMessage('MCP error 7: text'), 'text');
  assert.equal(bareErrorMessage('plain text'), 'plain text');
});

test('tool results: audio is kept for attachment, annotations and _meta stay, error structured content rides along', () => {
  const audio = 'UklGRkwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YSgAAACAgYKDhIWGgIGCg4SFhoCBgoOEhYaAgYKDhIWGgIGCg4SFhoCBgoOEhYaA';
  const ok = toSandboxResult({ content: [{ type: 'audio', data: audio, mimeType: 'audio/wav', annotations: { priority: 1 } }] });
  assert.deepEqual(ok.images, [{ mime: 'audio/wav', data: audio }]);
  assert.deepEqual(ok.value, { type: 'audio', mimeType: 'audio/wav', data: audio, annotations: { priority: 1 } });
  const bad = toSandboxResult({ content: [{ type: 'audio', data: 'not base64!', mimeType: 'audio/wav' }] });
  assert.deepEqual(bad.images, []);
  const failed = toSandboxResult({
    content: [{ type: 'text', text: 'no', _meta: { a: 1 } }],
    structuredContent: { code: 3 },
    isError: true,
  });
  assert.equal(failed.isError, true);
  assert.equal(failed.errorText, 'no');
  assert.deepEqual(failed.errorStructured, { code: 3 });
  assert.deepEqual(failed.errorContent, [{ type: 'text', text: 'no', _meta: { a: 1 } }]);
  const raw = toSandboxResult({ content: [{ type: 'text', text: 'hi', annotations: { audience: ['user'] } }], isError: true }, true);
  assert.equal(raw.isError, false);
  assert.deepEqual(raw.value, { content: [{ type: 'text', text: 'hi', annotations: { audience: ['user'] } }], isError: true });
});

test('relayed progress names the server and tool, with the count', () => {
  assert.equal(toolProgressMessage('s', 't', { progress: 3, total: 10, message: 'copying\n files' }), 's.t: copying files (3/10)');
  assert.equal(toolProgressMessage('s', 't', { progress: 0.5 }), 's.t: 0.5');
  assert.ok(toolProgressMessage('s', 't', { progress: 1, message: 'x'.repeat(1000) }).length <= 200);
});
