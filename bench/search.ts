// Search alone, in seconds and without containers: latency over a 5,000-tool catalog and
// recall on the three query sets, and the share of requests no tool serves answered with
// nothing. `node bench/search.ts` (bench/run.ts reports the same).
import { searchLatency } from './catalog.ts';
import { evaluateNoMatch, evaluateSearch, NO_MATCH_SETS, QUERY_SETS } from '../test/helpers/search-eval.ts';

const ms = (v: number): string => `${v.toFixed(2)} ms`;

export function searchQuality(): Record<keyof typeof QUERY_SETS, { recallAt1: number; recallAt5: number; queries: number }> {
  const out = {} as Record<keyof typeof QUERY_SETS, { recallAt1: number; recallAt5: number; queries: number }>;
  for (const [name, file] of Object.entries(QUERY_SETS) as Array<[keyof typeof QUERY_SETS, string]>) {
    const r = evaluateSearch(undefined, file);
    out[name] = { recallAt1: r.recallAt1, recallAt5: r.recallAt5, queries: r.queries };
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rounds = process.argv.includes('--smoke') ? 2 : 40;
  for (let i = 0; i < 3; i++) {
    const l = searchLatency(5000, rounds);
    console.log(
      `Search over ${l.tools} tools: index built in ${ms(l.buildMs)}, query p50 ${ms(l.query.p50)}, p95 ${ms(l.query.p95)}; ` +
        `a 1,000-word query p50 ${ms(l.longQuery.p50)}`,
    );
  }
  for (const [name, q] of Object.entries(searchQuality())) {
    console.log(`${name.padEnd(8)} ${q.queries} queries: recall@1 ${q.recallAt1.toFixed(2)}, recall@5 ${q.recallAt5.toFixed(2)}`);
  }
  for (const [name, file] of Object.entries(NO_MATCH_SETS)) {
    const r = evaluateNoMatch(undefined, file);
    console.log(
      `${name.padEnd(8)} ${r.queries} requests no tool serves: answered with nothing ${r.empty.toFixed(2)}, ` +
        `with nothing or weak hits only ${r.emptyOrWeak.toFixed(2)}`,
    );
  }
}
