// Search quality on the real tool lists of ten npm MCP servers (88 tools), six query sets:
// - search-queries.json (45): in view while the ranking was tuned, first and second time;
// - search-queries-holdout.json (20): held out when written; looked at while the ranking was
//   reworked (ranking.ts), so a regression set now;
// - search-queries-lexicon.json (418): written and looked at while the concept lexicon
//   (lexicon.ts) was built, a regression set;
// - search-queries-holdout2.json (75): written before both, never used to choose a feature or
//   a weight; only its aggregate figures were looked at while the lexicon was built (see
//   docs/benchmarks.md).
// - search-queries-values.json (51): requests carrying values (names, places, paths, quoted
//   text), written for and tuned on with the rule on key words no tool has (ranking/score.ts),
//   and 16 naming a well-known service no server provides, for the rule on such services
//   (ranking/services.ts).
// - search-queries-objects.json (44): requests whose object the right tool does not name ("save
//   the report to disk"), which a rule on a hit that answers only the request's verb lost.
// Queries are answered as sandboxed code gets them: nothing when the best hit scores under the
// threshold. Four no-match sets (requests no configured tool serves) measure how often search
// answers nothing, and a destructive set that deleting tools rank low unless asked for.
// Each asserts the level reached, a little below it, so that a change that loses ground fails.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WEAK_SCORE } from '../../src/bridge/catalog/ranking.ts';
import {
  evaluateDestructive,
  evaluateNoMatch,
  evaluateSearch,
  NO_MATCH_SETS,
  QUERY_SETS,
  type SearchEval,
} from '../helpers/search-eval.ts';

function detail(result: SearchEval): string {
  return [
    ...result.misses.map((m) => `not in top 5: "${m.query}" -> ${m.got.join(', ')}`),
    ...result.notFirst.map((m) => `not first: "${m.query}" -> ${m.got[0]}`),
  ].join('\n');
}

test('plain-language queries find the right tool over real catalogs (tuned set)', () => {
  const result = evaluateSearch(undefined, QUERY_SETS.tuned);
  assert.ok(result.tools >= 80, `only ${result.tools} tools in the real catalogs`);
  assert.ok(result.recallAt5 >= 0.97, `recall@5 ${result.recallAt5}\n${detail(result)}`);
  assert.ok(result.recallAt1 >= 0.97, `recall@1 ${result.recallAt1}\n${detail(result)}`);
});

test('the first held-out set (now a regression set) keeps its level', () => {
  const result = evaluateSearch(undefined, QUERY_SETS.holdout);
  assert.ok(result.recallAt5 >= 0.95, `recall@5 ${result.recallAt5}\n${detail(result)}`);
  assert.ok(result.recallAt1 >= 0.9, `recall@1 ${result.recallAt1}\n${detail(result)}`);
});

test('the lexicon set (paraphrases and cross-server confusions) keeps its level', () => {
  const result = evaluateSearch(undefined, 'test/fixtures/search-queries-lexicon.json');
  assert.ok(result.queries >= 400, `only ${result.queries} queries`);
  assert.ok(result.recallAt5 >= 0.98, `recall@5 ${result.recallAt5}\n${detail(result)}`);
  assert.ok(result.recallAt1 >= 0.85, `recall@1 ${result.recallAt1}\n${detail(result)}`);
});

test('requests carrying values (names, places, paths, quoted text) are not taken for requests no tool serves', () => {
  const result = evaluateSearch(undefined, 'test/fixtures/search-queries-values.json');
  assert.ok(result.queries >= 50, `only ${result.queries} queries`);
  // 0.82 / 0.90 over 51: the first 35 at 0.86 / 0.97; of the 16 naming a service no server
  // provides, 12 / 12, with or without the rule on such services (the rest lost before it).
  assert.ok(result.recallAt5 >= 0.9, `recall@5 ${result.recallAt5}\n${detail(result)}`);
  assert.ok(result.recallAt1 >= 0.82, `recall@1 ${result.recallAt1}\n${detail(result)}`);
});

test('requests whose object the right tool does not name keep their answers', () => {
  const result = evaluateSearch(undefined, 'test/fixtures/search-queries-objects.json');
  assert.ok(result.queries >= 40, `only ${result.queries} queries`);
  assert.ok(result.recallAt5 >= 0.86, `recall@5 ${result.recallAt5}\n${detail(result)}`);
  assert.ok(result.recallAt1 >= 0.75, `recall@1 ${result.recallAt1}\n${detail(result)}`);
});

test('the second held-out set, written before the rework: the level reached', () => {
  const result = evaluateSearch(undefined, QUERY_SETS.holdout2);
  assert.ok(result.queries >= 40, `only ${result.queries} queries`);
  // The goal: recall@1 0.85 and recall@5 0.97. With the concept lexicon the ranking reaches
  // 0.88 and 1.00 (0.67 and 0.89 before it); see docs/benchmarks.md.
  assert.ok(result.recallAt5 >= 0.98, `recall@5 ${result.recallAt5}\n${detail(result)}`);
  assert.ok(result.recallAt1 >= 0.86, `recall@1 ${result.recallAt1}\n${detail(result)}`);
});

test('requests no configured tool serves get no hits (the three held-out no-match sets, and the set the threshold was calibrated on)', () => {
  // Written before the threshold: the ranker without one answered 5 of 35 with nothing (0.14),
  // the threshold alone 10 (0.29), with key words no tool has counted 15 (0.43).
  const heldOut = evaluateNoMatch(undefined, NO_MATCH_SETS.nomatch);
  const shown = (r: typeof heldOut) => r.answered.map((a) => `"${a.query}" -> ${a.first} ${a.score.toFixed(2)}`).join('\n');
  assert.ok(heldOut.queries >= 20, `only ${heldOut.queries} queries`);
  assert.ok(heldOut.empty >= 0.42, `answered nothing for ${heldOut.empty}\n${shown(heldOut)}`);
  const tuning = evaluateNoMatch(undefined, NO_MATCH_SETS.nomatchTuning);
  // 0.42 before the rule on well-known services no server provides, 0.63 with it.
  assert.ok(tuning.empty >= 0.62, `answered nothing for ${tuning.empty}\n${shown(tuning)}`);
  // Written after the first held-out set had been looked at; 0.66 when committed, before any tuning.
  const heldOut2 = evaluateNoMatch(undefined, NO_MATCH_SETS.nomatch2);
  assert.ok(heldOut2.queries >= 30, `only ${heldOut2.queries} queries`);
  assert.ok(heldOut2.empty >= 0.65, `answered nothing for ${heldOut2.empty}\n${shown(heldOut2)}`);
  // Written after all of the above; 0.69 (22 of 32) when committed, before any further tuning.
  const heldOut3 = evaluateNoMatch(undefined, NO_MATCH_SETS.nomatch3);
  assert.ok(heldOut3.queries >= 30, `only ${heldOut3.queries} queries`);
  assert.ok(heldOut3.empty >= 0.68, `answered nothing for ${heldOut3.empty}\n${shown(heldOut3)}`);
});

test('requests no configured tool serves that still get hits mostly get weak ones, which search says may not do it', () => {
  // The band (WEAK_SCORE) was chosen on the tuning sets; the two newer held-out sets were measured once, after.
  const levels = [
    [NO_MATCH_SETS.nomatch, 0.71],
    [NO_MATCH_SETS.nomatchTuning, 0.87],
    [NO_MATCH_SETS.nomatch2, 0.75],
    [NO_MATCH_SETS.nomatch3, 0.9],
  ] as const;
  for (const [file, level] of levels) {
    const result = evaluateNoMatch(undefined, file);
    const strong = result.answered.filter((a) => a.score >= WEAK_SCORE).map((a) => `"${a.query}" -> ${a.first} ${a.score.toFixed(2)}`);
    assert.ok(result.emptyOrWeak >= level, `${file}: nothing or weak hits for ${result.emptyOrWeak}\n${strong.join('\n')}`);
  }
});

test('deleting tools rank below the others unless the request asks to delete, and first when it does', () => {
  const result = evaluateDestructive();
  assert.ok(result.queries >= 10, `only ${result.queries} queries`);
  assert.deepEqual(result.wrong, []);
});
