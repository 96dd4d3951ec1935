// Search quality on real catalogs: recall@1 and recall@5 of plain-language queries over the
// tool lists of real npm MCP servers (test/fixtures/tool-lists.json, search-queries.json).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ToolCatalog } from '../../src/bridge/catalog/catalog.ts';

const toolListsSchema = z.object({
  servers: z.record(z.string(), z.object({ tools: z.array(z.unknown()) })),
});
const queriesSchema = z.object({ queries: z.array(z.object({ query: z.string(), expect: z.array(z.string()).min(1) })) });

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
  misses: Array<{ query: string; expect: string[]; got: string[] }>;
}

export function evaluateSearch(catalog = realCatalog(), file = 'test/fixtures/search-queries.json'): SearchEval {
  const { queries } = queriesSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  let at1 = 0;
  let at5 = 0;
  const misses: SearchEval['misses'] = [];
  for (const { query, expect } of queries) {
    const got = catalog.search(query, 5).map((t) => `${t.server}/${t.tool}`);
    if (expect.includes(got[0] ?? '')) at1++;
    if (got.some((g) => expect.includes(g))) at5++;
    else misses.push({ query, expect, got });
  }
  return { queries: queries.length, tools: catalog.allTools().length, recallAt1: at1 / queries.length, recallAt5: at5 / queries.length, misses };
}
