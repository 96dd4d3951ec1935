// Search quality on real catalogs: recall@1 and recall@5 of plain-language queries over the
// tool lists of real npm MCP servers (test/fixtures/tool-lists.json). Three query sets:
// search-queries.json (tuned on), search-queries-holdout.json (held out when written, looked at
// while the ranking was reworked, now a regression set) and search-queries-holdout2.json (written
// before that rework; see its "about"). Queries are answered as sandboxed code gets them
// (ToolCatalog.find: nothing when the best hit is under the score threshold). The no-match sets
// (requests no configured tool serves) measure how often search answers nothing, as it should.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ToolCatalog } from '../../src/bridge/catalog/catalog.ts';
import { WEAK_SCORE } from '../../src/bridge/catalog/ranking.ts';

const toolListsSchema = z.object({
  servers: z.record(z.string(), z.object({ tools: z.array(z.unknown()) })),
});
const queriesSchema = z.object({ queries: z.array(z.object({ query: z.string(), expect: z.array(z.string()).min(1) })) });

export const QUERY_SETS = {
  tuned: 'test/fixtures/search-queries.json',
  holdout: 'test/fixtures/search-queries-holdout.json',
  holdout2: 'test/fixtures/search-queries-holdout2.json',
} as const;

/** Requests no tool of the real catalog serves: three held-out sets (the first written before the threshold) and the set it was calibrated on. */
export const NO_MATCH_SETS = {
  nomatch: 'test/fixtures/search-queries-nomatch.json',
  nomatchTuning: 'test/fixtures/search-queries-nomatch-tuning.json',
  nomatch2: 'test/fixtures/search-queries-nomatch2.json',
  nomatch3: 'test/fixtures/search-queries-nomatch3.json',
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
    const got = catalog.find(query, 5).map((h) => `${h.entry.server}/${h.entry.tool}`);
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

export interface NoMatchEval {
  queries: number;
  /** The share of queries answered with nothing, as they should be. */
  empty: number;
  /** The share answered with nothing or with weak hits only (under WEAK_SCORE), which search says may not do it. */
  emptyOrWeak: number;
  /** The queries that got hits: the first one and its score. */
  answered: Array<{ query: string; first: string; score: number }>;
}

export function evaluateNoMatch(catalog = realCatalog(), file: string = NO_MATCH_SETS.nomatch): NoMatchEval {
  const { queries } = z.object({ queries: z.array(z.object({ query: z.string() })) }).parse(JSON.parse(readFileSync(file, 'utf8')));
  const answered: NoMatchEval['answered'] = [];
  for (const { query } of queries) {
    const [first] = catalog.find(query, 5);
    if (first) answered.push({ query, first: `${first.entry.server}/${first.entry.tool}`, score: first.score });
  }
  const strong = answered.filter((a) => a.score >= WEAK_SCORE).length;
  return {
    queries: queries.length,
    empty: (queries.length - answered.length) / queries.length,
    emptyOrWeak: (queries.length - strong) / queries.length,
    answered,
  };
}

/** A tool that deletes, by its name (the real catalog's servers give no annotations). */
const DELETES = /(^|[_-])(delete|remove|drop|destroy|clear|purge)([_-]|$)/;

export interface DestructiveEval {
  queries: number;
  /** Requests not asking to delete with a deleting tool in the first three, or asking to delete without it first. */
  wrong: Array<{ query: string; got: string[] }>;
  /** The share whose first hit is an expected tool. */
  recallAt1: number;
}

/** Deleting tools against intent (search-queries-destructive.json): low unless asked for, first when asked for. */
export function evaluateDestructive(catalog = realCatalog(), file = 'test/fixtures/search-queries-destructive.json'): DestructiveEval {
  const cases = z
    .object({ queries: z.array(z.object({ query: z.string(), expect: z.array(z.string()).min(1), deletes: z.boolean().optional() })) })
    .parse(JSON.parse(readFileSync(file, 'utf8'))).queries;
  const wrong: DestructiveEval['wrong'] = [];
  let at1 = 0;
  for (const { query, expect, deletes } of cases) {
    const got = catalog.find(query, 5).map((h) => `${h.entry.server}/${h.entry.tool}`);
    const first = expect.includes(got[0] ?? '');
    if (first) at1++;
    const deletingEarly = got.slice(0, 3).some((g) => DELETES.test(g.split('/')[1] ?? ''));
    if (deletes ? !first : deletingEarly) wrong.push({ query, got });
  }
  return { queries: cases.length, wrong, recallAt1: at1 / cases.length };
}
