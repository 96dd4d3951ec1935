// Ranked tool search: BM25 (MiniSearch) over tool names split into words, descriptions,
// parameter names and server names, with English stemming so "messages" finds "message" and
// "creating" finds "create". Built once per catalog change, queried in microseconds.
import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import type { ToolEntry } from './catalog.ts';

/** "createPullRequest", "create_pull-request" -> "create pull request". */
export function splitWords(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/[_\-./:]+/g, ' ');
}

const STOP_WORDS = new Set(['a', 'an', 'the', 'to', 'of', 'for', 'in', 'on', 'and', 'or', 'with', 'by', 'from', 'is', 'it', 'this', 'that', 'be', 'as', 'at', 'i', 'me', 'my', 'some', 'all']);

function processTerm(term: string): string | null {
  const lower = term.toLowerCase();
  if (lower.length === 0 || STOP_WORDS.has(lower)) return null;
  return stemmer(lower);
}

interface IndexedDoc {
  id: number;
  name: string;
  description: string;
  params: string;
  server: string;
}

export class ToolIndex {
  private readonly index: MiniSearch<IndexedDoc>;
  private readonly entries: readonly ToolEntry[];

  constructor(entries: readonly ToolEntry[]) {
    this.entries = entries;
    this.index = new MiniSearch<IndexedDoc>({
      fields: ['name', 'description', 'params', 'server'],
      tokenize: (text) => splitWords(text).split(/[^\p{L}\p{N}]+/u).filter(Boolean),
      processTerm,
      searchOptions: {
        boost: { name: 3, server: 1.5, description: 1, params: 0.7 },
        prefix: (term) => term.length >= 4,
        fuzzy: (term) => (term.length >= 6 ? 0.15 : false),
        combineWith: 'OR',
      },
    });
    this.index.addAll(
      entries.map((entry, id) => ({
        id,
        name: entry.tool,
        description: entry.description,
        params: entry.params.map((p) => p.name).join(' '),
        server: `${entry.server} ${entry.serverDescription ?? ''}`,
      })),
    );
  }

  get size(): number {
    return this.entries.length;
  }

  search(query: string, limit: number): ToolEntry[] {
    if (query.trim() === '') return [];
    return this.index
      .search(query)
      .slice(0, limit)
      .map((hit) => this.entries[hit.id as number]!);
  }
}
