// The ranking pinned: the top five tools and their scores for a fixed set of queries over the
// real tool lists of ten MCP servers (test/fixtures/tool-lists.json), kept in
// test/fixtures/search-pinned.json. A change that moves any tool or score fails here, so that
// reworking the ranker's code without meaning to change it is checked. A change that means to
// rank differently writes the file anew (SEARCH_PIN_WRITE=1) and shows the moves in its diff.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { z } from 'zod';
import { ToolRanker } from '../../src/bridge/catalog/ranking.ts';
import { QUERY_SETS, realCatalog } from '../helpers/search-eval.ts';

const PINNED = 'test/fixtures/search-pinned.json';

/** Queries for each part of the ranking, besides the tuned and first held-out sets. */
const PROBES = [
  'please can you delete the file',
  'who approved the pr',
  'add 19 and 23',
  'github',
  'postgres orders',
  'how far is paris from berlin',
  'serch repositores',
  'relationship management',
  'which issues are open',
  'open a file',
  'open an issue',
  'sequential thinking',
  'is there a tool to take a screenshot',
  'remove entities from the knowledge graph',
  'look for a github user',
];

const pinnedSchema = z.object({ queries: z.array(z.object({ query: z.string(), top: z.array(z.string()) })) });

function queries(): string[] {
  const fromSet = (file: string): string[] =>
    z
      .object({ queries: z.array(z.object({ query: z.string() })) })
      .parse(JSON.parse(readFileSync(file, 'utf8')))
      .queries.map((q) => q.query);
  return [...fromSet(QUERY_SETS.tuned), ...fromSet(QUERY_SETS.holdout), ...PROBES];
}

/** "server/tool score" of the best five, the score to ten significant digits. */
function ranked(ranker: ToolRanker, names: readonly string[], query: string, skip?: ReadonlySet<string>): string[] {
  return ranker.scored(query, 5, skip).map((r) => `${names[r.doc]} ${r.score.toPrecision(10)}`);
}

test('the ranking of a real catalog stays as pinned, tools and scores', () => {
  const tools = realCatalog().allTools();
  const names = tools.map((t) => `${t.server}/${t.tool}`);
  const ranker = new ToolRanker(tools);
  const got = queries().map((query) => ({ query, top: ranked(ranker, names, query) }));
  // Servers left out of the results still count in the statistics.
  const skip = new Set(['github', 'filesystem']);
  got.push({ query: 'skip github, filesystem: read a file', top: ranked(ranker, names, 'read a file', skip) });
  if (process.env['SEARCH_PIN_WRITE']) writeFileSync(PINNED, `${JSON.stringify({ queries: got }, null, 2)}\n`);
  const pinned = pinnedSchema.parse(JSON.parse(readFileSync(PINNED, 'utf8')));
  assert.deepEqual(got, pinned.queries);
});
