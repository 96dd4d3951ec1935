// The tool ranker behind search_tool_docs. BM25F over a tool's fields (name words without the
// server's words, title, the description's first sentence, the rest of it, parameter names and
// choices, parameter descriptions, the server), each query word scored by its best form: itself,
// a longer word it starts ("config" -> configuration), a one-letter typo, the base of a derived
// word (relationship -> relation), or a related word from the concept lexicon (lexicon.ts via
// synonyms.ts: other words for an action or a thing, short forms, what a two-word phrase means,
// "how far" -> distance, and a verb's sense by its object, "open a file" -> read). Then
// reranked by:
// - coverage: how much of the query (weighted by rarity) the tool answers, counting a word
//   found only in the long description or a parameter's text for less;
// - how much of the tool's own name the query names, and its name's words said as written;
// - the action: the query's verb (its first word, "open a PR") being the tool's first name word;
//   a question ("which files changed...") asks to read, so read tools gain and verbs in it don't
//   count as actions;
// - two query words side by side in the tool's text ("status checks");
// - server names used as hints ("look for a github user"): a word only one server's tools use;
// - a tool that deletes (its annotation, its action or its description's first word) ranks well
//   below the others when the query does not ask to delete ("remember that Alice works at
//   Acme"), unless its action is the query's verb (an annotated write_file for "write a file").
// Each hit also gets a score from 0 to 1 (ranking/score.ts): how much of the request it answers;
// a key word of the request no tool has ("SNOOZE my alarm", "my GMAIL inbox") lowers them all.
// Titles and annotations (readOnlyHint, destructiveHint) are used when a server gives them.
// Everything is precomputed per catalog; a query over 5,000 tools takes a couple of milliseconds.
// The steps are in ranking/: the index (indexing.ts), the query read (query.ts), a word's forms
// (word-forms.ts), BM25F (match.ts), the signals (rerank.ts), their weights (weights.ts).
import { splitWords, wordsOf } from '../../shared/words.ts';
import { buildIndex, type RankableTool, type RankIndex } from './ranking/indexing.ts';
import { creditServerHints, creditWord, idf } from './ranking/match.ts';
import { readQuery } from './ranking/query.ts';
import { bestOf, phraseMatches, signalsOf, type Found } from './ranking/rerank.ts';
import { scoreOf } from './ranking/score.ts';
import { servicesNamed } from './ranking/services.ts';
import { Tally } from './ranking/tally.ts';
import { DEFAULT_WEIGHTS, type RankWeights } from './ranking/weights.ts';

export { splitWords, wordsOf };
export { MAX_QUERY_WORDS } from './ranking/query.ts';
export { MIN_SCORE, WEAK_SCORE } from './ranking/score.ts';
export type { RankableTool, RankWeights };

export interface ScoredTool {
  /** Index of the tool in the list the ranker was built from. */
  doc: number;
  score: number;
  /** From 0 to 1: how much of the request it answers (ranking/score.ts); never above the hit before it. */
  relevance: number;
  /** What made the score (for tests and tuning). */
  parts: Record<string, number>;
}

export class ToolRanker {
  private readonly weights: RankWeights;
  private readonly index: RankIndex;
  /** Scratch space for one query, reused. */
  private readonly tally: Tally;

  constructor(tools: readonly RankableTool[], weights: Partial<RankWeights> = {}) {
    this.weights = { ...DEFAULT_WEIGHTS, ...weights };
    this.index = buildIndex(tools, this.weights);
    this.tally = new Tally(tools.length);
  }

  get size(): number {
    return this.index.docs.length;
  }

  /** Indices of the best tools for a query, best first. */
  /** `skipServers`: their tools are left out of the results (they still count in the statistics, so the rest rank as they would). */
  rank(query: string, limit: number, skipServers?: ReadonlySet<string>): number[] {
    return this.scored(query, limit, skipServers).map((r) => r.doc);
  }

  /** The well-known services a request names that no server of the catalog mentions ("Google Drive"). */
  unserved(query: string): string[] {
    return servicesNamed(query).filter((service) => !this.index.services.has(service));
  }

  /** The best tools for a query, best first, with their scores and what made them. */
  scored(query: string, limit: number, skipServers?: ReadonlySet<string>): ScoredTool[] {
    const { index, weights } = this;
    const read = readQuery(query, index.serverHints);
    if ((read.asked.length === 0 && read.hints.length === 0) || limit <= 0) return [];
    const tally = this.tally.begin();
    creditServerHints(index, weights, read, tally);
    read.asked.forEach((asked, wordIndex) => creditWord(index, weights, read, asked, wordIndex, tally));
    // A well-known service no configured server mentions ("copy the backups to Google Drive") is a
    // part of the request no hit answers, like a key word no tool has (match.ts).
    tally.foreignWeight += this.unserved(query).length * idf(index, 0) * weights.unservedService;
    const found: Found = { query: read, tally, phrases: phraseMatches(index, read.asked, tally) };
    const partsOf = (doc: number): Record<string, number> => signalsOf(index.docs[doc]!, doc, found, weights);
    const candidates = tally.totalWeight > 0 ? tally.touched.filter((doc) => !skipServers?.has(index.docs[doc]!.server)) : [];
    const top = bestOf(candidates, limit, (doc) => partsOf(doc)['total']!);
    let ceiling = 1;
    const result = top.map(({ doc, score }) => {
      const parts = partsOf(doc);
      ceiling = Math.min(ceiling, scoreOf(parts, tally, weights));
      return { doc, score, relevance: ceiling, parts };
    });
    tally.end();
    return result;
  }
}
