// Search quality on real catalogs: recall@1 and recall@5 of plain-language queries over the
// tool lists of real npm MCP servers (test/fixtures/tool-lists.json). Three query sets:
// search-queries.json (tuned on), search-queries-holdout.json (held out when written, looked at
// while the ranking was reworked, now a regression set) and search-queries-holdout2.json (written
// before that rework; see its "about").
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ToolCatalog } from '../../src/bridge/catalog/catalog.ts';

const toolListsSchema = z.object({
  servers: z.record(z.string(), z.object({ tools: z.array(z.unknown()) })),
});
const queriesSchema = z.object({ queries: z.array(z.object({ query: z.string(), expect: z.array(z.string()).min(1) })) });

export const QUERY_SETS = {
  tuned: 'test/fixtures/search-queries.json',
  holdout: 'test/fixtures/search-queries-holdout.json',
  holdout2: 'test/fixtures/search-queries-holdout2.json',
} as const;

export function realCatalog(): ToolCatalog {
  const lists = toolListsSchema.parse(JSON.parse(readFileSync('test/fixtures/tool-lists.json', 'utf8')));
  const catalog = new ToolCatalog(Object.keys(lists.servers).map((name) => ({ name, fingerprint: name })));
  for (const [name, server] of Object.entries(lists.servers)) catalog.setTools(name, server.tools);
  return catalog;
}

export interface SearchEval {
  queries: number;
  tools: number;
  recallAt1: number;
  recallAt5: number;
  /** Queries whose tool is not in the top five. */
  misses: Array<{ query: string; expect: string[]; got: string[] }>;
  /** Queries whose tool is in the top five but not first. */
  notFirst: Array<{ query: string; expect: string[]; got: string[] }>;
}

export function evaluateSearch(catalog = realCatalog(), file: string = QUERY_SETS.tuned): SearchEval {
  const { queries } = queriesSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  let at1 = 0;
  let at5 = 0;
  const misses: SearchEval['misses'] = [];
  const notFirst: SearchEval['notFirst'] = [];
  for (const { query, expect } of queries) {
    const got = catalog.search(query, 5).map((t) => `${t.server}/${t.tool}`);
    if (expect.includes(got[0] ?? '')) at1++;
    if (got.some((g) => expect.includes(g))) {
      at5++;
      if (!expect.includes(got[0] ?? '')) notFirst.push({ query, expect, got });
    } else misses.push({ query, expect, got });
  }
  return {
    queries: queries.length,
    tools: catalog.allTools().length,
    recallAt1: at1 / queries.length,
    recallAt5: at5 / queries.length,
    misses,
    notFirst,
  };
}
