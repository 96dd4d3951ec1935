// The first pass of a query: BM25F. Each query word credits every tool that has one of its
// forms (word-forms.ts) with the best of them, and with coverage: fully for a form found in the
// name or first sentence, less for one found only in the long description or a parameter's text.
// A word one tool of a server has speaks a little for the server's other tools, and a server
// the query names counts as a word every tool of that server has.
import type { RankIndex } from './indexing.ts';
import { relatedScale, type AskedWord, type KeyRole, type RankQuery } from './query.ts';
import type { Tally } from './tally.ts';
import type { RankWeights } from './weights.ts';
import { wordForms } from './word-forms.ts';

export function idf(index: RankIndex, df: number): number {
  const n = index.docs.length;
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/** How much a word no tool has counts against the query's hits, by what it is to the request. */
function foreignScale(w: RankWeights, role: KeyRole): number {
  return role === 'verb' ? w.foreignVerb : role === 'head' ? w.foreignHead : w.foreignName;
}

/** A server the query names counts as a word every tool of that server has. */
export function creditServerHints(index: RankIndex, w: RankWeights, query: RankQuery, tally: Tally): void {
  const k1 = w.k1;
  for (const servers of query.hints) {
    const docs = [...servers].flatMap((s) => index.serverDocs.get(s) ?? []);
    const weight = idf(index, docs.length);
    const tf = w.name;
    tally.totalWeight += weight;
    for (const doc of docs) tally.credit(doc, (weight * tf * (k1 + 1)) / (tf + k1), weight, 1);
  }
}

/** Credits the tools one query word (the `wordIndex`th asked) finds, by its best form in each. */
export function creditWord(index: RankIndex, w: RankWeights, query: RankQuery, asked: AskedWord, wordIndex: number, tally: Tally): void {
  const { word, stem, extra } = asked;
  const { best, bestCredit, stamp } = tally;
  const k1 = w.k1;
  const variants = wordForms(index.vocabulary, w, word, stem, extra, relatedScale(query, asked, w));
  if (variants.length === 0) {
    // A key word no tool has in any form ("SNOOZE my alarm"): what the request asks for is missing.
    const role = query.keys.get(asked.index);
    if (role) tally.foreignWeight += idf(index, 0) * foreignScale(w, role);
    return;
  }
  const own = index.vocabulary.get(stem);
  // A word the catalog never uses weighs what its other forms weigh on average.
  const wordWeight = own
    ? idf(index, own.docs.length)
    : variants.reduce((sum, v) => sum + idf(index, index.vocabulary.get(v.term)!.docs.length), 0) / variants.length;
  tally.totalWeight += wordWeight;
  const seen: number[] = [];
  for (const { term, weight } of variants) {
    tally.queryForms.set(term, Math.max(tally.queryForms.get(term) ?? 0, weight));
    if (query.leading?.word === word) tally.leadingForms.set(term, Math.max(tally.leadingForms.get(term) ?? 0, weight));
    const posting = index.vocabulary.get(term)!;
    const termIdf = idf(index, posting.docs.length) * weight;
    for (let i = 0; i < posting.docs.length; i++) {
      const doc = posting.docs[i]!;
      const tf = posting.tf[i]!;
      const value = (termIdf * tf * (k1 + 1)) / (tf + k1);
      if (bestCredit[doc] === 0) seen.push(doc);
      if (value > best[doc]!) best[doc] = value;
      // A word found in the name or first sentence answers the query; one found only in
      // the long text or a parameter's description much less.
      const c = weight * Math.min(1, tf / w.coverageField);
      if (c > bestCredit[doc]!) bestCredit[doc] = c;
    }
  }
  const serverCredit = new Map<string, number>();
  for (const doc of seen) {
    tally.credit(doc, best[doc]!, wordWeight, bestCredit[doc]!);
    const server = index.docs[doc]!.server;
    if ((serverCredit.get(server) ?? 0) < bestCredit[doc]!) serverCredit.set(server, bestCredit[doc]!);
    stamp[doc] = wordIndex;
    best[doc] = 0;
    bestCredit[doc] = 0;
  }
  if (w.serverSmoothing > 0) smoothServers(index, serverCredit, wordIndex, wordWeight, tally);
}

/** A word one tool of a server has speaks a little for the server's other tools. */
function smoothServers(
  index: RankIndex,
  serverCredit: ReadonlyMap<string, number>,
  wordIndex: number,
  wordWeight: number,
  tally: Tally,
): void {
  for (const [server, c] of serverCredit) {
    for (const doc of index.serverDocs.get(server) ?? []) {
      if (tally.stamp[doc] === wordIndex) continue;
      if (tally.smooth[doc] === 0) tally.smoothed.push(doc);
      tally.smooth[doc]! += c * wordWeight;
    }
  }
}
