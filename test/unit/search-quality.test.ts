// Search quality on the real tool lists of ten npm MCP servers: plain-language queries must
// find the right tool first nearly always, and in the top five always.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateSearch } from '../helpers/search-eval.ts';

test('plain-language queries find the right tool over real catalogs', () => {
  const result = evaluateSearch();
  assert.ok(result.tools >= 80, `only ${result.tools} tools in the real catalogs`);
  const detail = result.misses.map((m) => `"${m.query}" -> ${m.got.join(', ')}`).join('\n');
  assert.ok(result.recallAt5 >= 0.95, `recall@5 ${result.recallAt5}\n${detail}`);
  assert.ok(result.recallAt1 >= 0.85, `recall@1 ${result.recallAt1}`);
});

test('held-out queries, never used for tuning, still find the tool in the top five', () => {
  const result = evaluateSearch(undefined, 'test/fixtures/search-queries-holdout.json');
  assert.ok(result.recallAt5 >= 0.9, `held-out recall@5 ${result.recallAt5}: ${result.misses.map((m) => m.query).join('; ')}`);
});
