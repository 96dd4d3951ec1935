// The second pass of a query: each tool's BM25F score times its signals: how much of the query
// it covers, how much of its name the query names (and as written), whether its action is the
// query's verb, query words side by side in its text, a server the query names, and the
// intent (a question reads; a tool that deletes ranks low unless the query asks to delete).
import type { Doc, RankIndex } from './indexing.ts';
import type { AskedWord, RankQuery } from './query.ts';
import type { Tally } from './tally.ts';
import type { RankWeights } from './weights.ts';

/** Per tool, the word pairs of the query found side by side in its text, each weighted by where. */
export function phraseMatches(index: RankIndex, asked: readonly AskedWord[], tally: Tally): Map<number, number> {
  const phrases = new Map<number, number>();
  for (let i = 1; i < asked.length; i++) {
    const first = asked[i - 1]!.stem;
    const second = asked[i]!.stem;
    const a = index.vocabulary.get(first);
    const b = index.vocabulary.get(second);
    if (!a || !b) continue;
    // Only tools with both words are looked at.
    const [small, large] = a.docs.length <= b.docs.length ? [a, b] : [b, a];
    const inLarge = tally.marked(large.docs);
    for (const doc of small.docs) {
      if (!inLarge(doc)) continue;
      const weight = pairWeight(index.docs[doc]!, first, second);
      if (weight > 0) phrases.set(doc, (phrases.get(doc) ?? 0) + weight);
    }
  }
  return phrases;
}

/** The weight of the best text of a tool where `first` is followed by `second`; 0 if none. */
function pairWeight(d: Doc, first: string, second: string): number {
  let weight = 0;
  for (const [seq, w2] of d.sequences) {
    if (w2 <= weight) continue;
    for (let k = 1; k < seq.length; k++) {
      if (seq[k - 1] === first && seq[k] === second) {
        weight = w2;
        break;
      }
    }
  }
  return weight;
}

/** The share of the tool's name the query names, by its best forms. */
function nameMatch(d: Doc, queryForms: ReadonlyMap<string, number>): number {
  let named = 0;
  for (const stem of d.nameStems) named += queryForms.get(stem) ?? 0;
  return named / d.nameStems.length;
}

/** The share of the name's words the query has exactly as written. */
function surfaceMatch(d: Doc, said: ReadonlySet<string>): number {
  let surface = 0;
  for (const word of d.nameWords) if (said.has(word)) surface++;
  return surface / d.nameWords.length;
}

/** Reading, deleting: what the query asks against what the tool does (`action`: the query names its action). */
function intentOf(d: Doc, query: RankQuery, w: RankWeights, action: number): number {
  let intent = 1;
  if (query.question && d.reads) intent *= 1 + w.question;
  if ((query.readIntent && d.readOnly) || (query.deleteIntent && d.destructive)) intent *= 1 + w.intentHint;
  // A tool that deletes ranks below the others unless the query asks to delete, or names what
  // it does (a server may mark write_file destructive: "write a file" still wants it).
  if (!query.deleteIntent && d.destructive && action === 0) intent *= w.destructive;
  return intent;
}

/** What a query found besides the words' BM25F, for the signals. */
export interface Found {
  query: RankQuery;
  tally: Tally;
  phrases: ReadonlyMap<number, number>;
}

/** A tool's signals and its total score (`total`). */
export function signalsOf(d: Doc, doc: number, { query, tally, phrases }: Found, w: RankWeights): Record<string, number> {
  const coverage = (tally.matched[doc]! + w.serverSmoothing * tally.smooth[doc]!) / tally.totalWeight;
  let named = 0;
  let action = 0;
  let leadAction = 0;
  const verb = d.nameStems[0];
  if (verb !== undefined) {
    named = nameMatch(d, tally.queryForms);
    // A question has no verb of its own to match ("when was this file last modified").
    action = query.question ? 0 : (tally.queryForms.get(verb) ?? 0);
    leadAction = tally.leadingForms.get(verb) ?? 0;
  }
  const surface = d.nameWords.length > 0 ? surfaceMatch(d, query.said) : 0;
  const pairCount = query.asked.length - 1;
  const phrase = pairCount > 0 ? (phrases.get(doc) ?? 0) / pairCount : 0;
  const hint = query.hinted.has(d.server) ? w.serverHint : 1;
  const intent = intentOf(d, query, w, action);
  const bm25 = tally.score[doc]!;
  const total =
    bm25 *
    Math.pow(Math.min(1, coverage), w.coverage) *
    (1 + w.nameCoverage * named) *
    (1 + w.surface * surface) *
    (1 + w.action * action) *
    (1 + w.leadAction * leadAction) *
    (1 + w.phrase * phrase) *
    hint *
    intent;
  return { total, bm25, coverage, named, surface, action, leadAction, phrase, hint, intent };
}

/** The best `limit` docs by `scoreOf`, best first (ties: catalog order), without sorting them all. */
export function bestOf(docs: readonly number[], limit: number, scoreOf: (doc: number) => number): Array<{ doc: number; score: number }> {
  const top: Array<{ doc: number; score: number }> = [];
  for (const doc of docs) {
    const s = scoreOf(doc);
    const last = top[top.length - 1];
    if (top.length === limit && last && (s < last.score || (s === last.score && doc > last.doc))) continue;
    let i = top.length;
    while (i > 0 && (top[i - 1]!.score < s || (top[i - 1]!.score === s && top[i - 1]!.doc > doc))) i--;
    top.splice(i, 0, { doc, score: s });
    if (top.length > limit) top.pop();
  }
  return top;
}
