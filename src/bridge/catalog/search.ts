// Ranked tool search: BM25 (MiniSearch) over tool names split into words, descriptions,
// parameter names and server names, with English stemming so "messages" finds "message" and
// "creating" finds "create". Built once per catalog change, queried in microseconds.
import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import type { ToolEntry } from './catalog.ts';
import { relatedWords } from './synonyms.ts';

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

/** Weight of a word the query did not have but is related to one it had. */
const RELATED_WEIGHT = 0.35;
/** Boost for a tool whose leading action word (create, list...) is the query's. */
const ACTION_BOOST = 1.6;

function words(text: string): string[] {
  return splitWords(text)
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** The tool's action: the first word of its name that is not part of the server's name. */
function actionOf(entry: ToolEntry): string | undefined {
  const serverWords = new Set(words(entry.server));
  const first = words(entry.tool).find((w) => !serverWords.has(w) && w !== 'maps');
  return first ? (processTerm(first) ?? undefined) : undefined;
}

export class ToolIndex {
  private readonly index: MiniSearch<IndexedDoc>;
  private readonly entries: readonly ToolEntry[];
  private readonly actions: Array<string | undefined>;

  constructor(entries: readonly ToolEntry[]) {
    this.entries = entries;
    this.actions = entries.map(actionOf);
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
    const asked = words(query).filter((w) => !STOP_WORDS.has(w));
    if (asked.length === 0) return [];
    const related = relatedWords(asked);
    const askedStems = new Set(asked.map((w) => processTerm(w)));
    const actions = new Set([...asked, ...related].map((w) => processTerm(w)).filter((w): w is string => !!w));
    const leading = processTerm(asked[0]!);
    const leadingGroup = new Set([leading, ...relatedWords([asked[0]!]).map((w) => processTerm(w))]);
    // The agent's own words get prefix and fuzzy matching; related words match exactly,
    // which keeps a query over thousands of tools within a few milliseconds.
    const tree = related.length > 0
      ? { combineWith: 'OR' as const, queries: [asked.join(' '), { queries: [related.join(' ')], prefix: false, fuzzy: false }] }
      : asked.join(' ');
    return this.index
      .search(tree, {
        boostTerm: (term) => (askedStems.has(term) ? 1 : RELATED_WEIGHT),
        boostDocument: (id) => {
          const action = this.actions[id as number];
          if (!action || !actions.has(action)) return 1;
          return leadingGroup.has(action) ? ACTION_BOOST : 1.15;
        },
      })
      .slice(0, limit)
      .map((hit) => this.entries[hit.id as number]!);
  }
}
