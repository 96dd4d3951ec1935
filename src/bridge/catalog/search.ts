// Ranked tool search over every proxied server's tools (search_tool_docs, the Tools view's
// filter). The ranking itself is in ranking.ts: BM25F over name words, title, first sentence,
// description, parameters and server, with English stemming, a concept lexicon (lexicon.ts),
// query coverage, name and phrase matches, the action word and server-name hints. Built once
// per catalog change, queried in a few milliseconds over thousands of tools.
import type { ToolEntry } from './catalog.ts';
import { ToolRanker, type RankableTool, type RankWeights } from './ranking.ts';

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
}
