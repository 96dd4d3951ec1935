// Ranked tool search over every proxied server's tools (search_tool_docs, the Tools view's
// filter). The ranking itself is in ranking.ts: BM25F over name words, title, first sentence,
// description, parameters and server, with English stemming, a concept lexicon (lexicon.ts),
// query coverage, name and phrase matches, the action word and server-name hints. Built once
// per catalog change, queried in a few milliseconds over thousands of tools. Each hit has a
// score from 0 to 1 (ranking/score.ts); `find` answers nothing when the best is under MIN_SCORE.
import type { ToolEntry } from './catalog.ts';
import { MIN_SCORE, ToolRanker, type RankableTool, type RankWeights } from './ranking.ts';

/** A search hit: the tool and its score from 0 to 1. */
export interface ToolHit {
  entry: ToolEntry;
  score: number;
}

export { splitWords } from './ranking.ts';

export class ToolIndex {
  private readonly ranker: ToolRanker;
  private readonly entries: readonly ToolEntry[];

  constructor(entries: readonly ToolEntry[], weights?: Partial<RankWeights>) {
    this.entries = entries;
    // An entry that carries a tool's `title` and `annotations` (when a server gives them) has them used.
    this.ranker = new ToolRanker(entries satisfies readonly RankableTool[], weights);
  }

  get size(): number {
    return this.entries.length;
  }

  search(query: string, limit: number, skipServers?: ReadonlySet<string>): ToolEntry[] {
    return this.ranker.rank(query, limit, skipServers).map((i) => this.entries[i]!);
  }

  /** The well-known services a request names that no server of the catalog mentions ("Google Drive"). */
  unserved(query: string): string[] {
    return this.ranker.unserved(query);
  }

  /** The hits for a request with their scores; none when even the best does not answer it (under MIN_SCORE). */
  find(query: string, limit: number, skipServers?: ReadonlySet<string>): ToolHit[] {
    const scored = this.ranker.scored(query, limit, skipServers);
    if ((scored[0]?.relevance ?? 0) < MIN_SCORE) return [];
    return scored.map((r) => ({ entry: this.entries[r.doc]!, score: r.relevance }));
  }
}
