// A hit's score from 0 to 1, what search_tool_docs shows and what its "nothing fits" threshold
// reads: how much of the request the tool answers, and how plainly. The square root of the
// product of
// - answered: the share of the query's words (weighted by rarity) the tool has in some form;
//   words no tool has are left out (most are values, a name or a place), but for the query's
//   key words (query.ts keyWords: its verb, the head of what it acts on, a service named before
//   that head), which count as words no hit answers ("SNOOZE my alarm", "my GMAIL inbox"), as
//   does a well-known service no configured server mentions (services.ts: "to Google Drive");
// - strength: its BM25F per query word against the most a word can give (k1 + 1): the words
//   in its name or first sentence, not once in a long text;
// - named: the square root of (1 + the share of its name the query names) / 2.
// Within one query the scores follow the ranking (a hit never scores above the one before it);
// across queries they compare roughly: over the real catalog's query sets a right first hit
// scores 0.63 at the median (0.38 at the tenth percentile), the best hit for a request no tool
// serves 0.17 at the median.
import type { Tally } from './tally.ts';
import type { RankWeights } from './weights.ts';

/**
 * Below this, the best hit does not answer the request: search answers nothing. Calibrated on
 * the real catalog's query sets (test/helpers/search-eval.ts): just under the lowest best hit
 * of every query whose first hit is right, so that no right first hit is lost.
 */
export const MIN_SCORE = 0.18;

/**
 * Under this, the best hit shares words with the request but may not do it: search says so and
 * names the servers. Over the tuning query sets it flags 22 of the 38 requests no tool serves
 * that still get hits, and 6% of right first hits (docs/search.md).
 */
export const WEAK_SCORE = 0.3;

/** A hit's score from its signals (rerank.ts signalsOf) and the query's tally. */
export function scoreOf(parts: Readonly<Record<string, number>>, tally: Tally, w: RankWeights): number {
  if (tally.totalWeight <= 0) return 0;
  // Key words no tool has (match.ts) are part of the request no hit answers.
  const answered = (Math.min(1, parts['coverage'] ?? 0) * tally.totalWeight) / (tally.totalWeight + tally.foreignWeight);
  const strength = Math.min(1, (parts['bm25'] ?? 0) / ((w.k1 + 1) * tally.totalWeight));
  const named = Math.sqrt((1 + (parts['named'] ?? 0)) / 2);
  // A tool that deletes, for a request that does not ask to (rerank.ts intentOf): its words may
  // match ("remember ... relations"), it does not answer.
  const against = Math.min(1, parts['intent'] ?? 1);
  return Math.sqrt(answered * strength * named) * against;
}
