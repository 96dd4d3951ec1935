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
// - a tool that deletes is offered first only when the query asks to delete.
// Titles and annotations (readOnlyHint, destructiveHint) are used when a server gives them.
// Everything is precomputed per catalog; a query over 5,000 tools takes a couple of milliseconds.
import SearchableMap from 'minisearch/SearchableMap';
import { stemmer } from 'stemmer';
import { splitWords, stemOf, wordsOf } from '../../shared/words.ts';
import { actionWords, collocationTable, phraseTable, relatedTable } from './synonyms.ts';
import { annotationFlag } from './tool-hints.ts';

export { splitWords, wordsOf };

/** What the ranker reads of a tool; `title` and `annotations` are used when present. */
export interface RankableTool {
  server: string;
  tool: string;
  description: string;
  serverDescription?: string;
  params: ReadonlyArray<{ name: string; type?: string; description?: string }>;
  title?: unknown;
  annotations?: unknown;
}

function stemsOf(words: readonly string[]): string[] {
  const out: string[] = [];
  for (const word of words) {
    const stem = stemOf(word);
    if (stem) out.push(stem);
  }
  return out;
}

export interface RankWeights {
  /** BM25F field weights. */
  name: number;
  title: number;
  lead: number;
  body: number;
  params: number;
  paramDocs: number;
  server: number;
  /** BM25 saturation and length normalisation. */
  k1: number;
  b: number;
  /** Weight of a query word's other forms, relative to the word itself. */
  prefix: number;
  fuzzy: number;
  related: number;
  /** score × coverage^coverage: tools answering more of the query win. */
  coverage: number;
  /** The field-weighted frequency at which a word counts fully towards coverage. */
  coverageField: number;
  /** score × (1 + nameCoverage × share of the tool's name the query names). */
  nameCoverage: number;
  /** score × (1 + surface × share of the name's words the query has exactly as written). */
  surface: number;
  /** score × (1 + action) when a query word (or a related word) is the tool's action. */
  action: number;
  /** score × (1 + leadAction) more when that word is the one the query starts with (its verb). */
  leadAction: number;
  /** score × (1 + question) for a tool that reads (get, list, search...) when the query is a question. */
  question: number;
  /** Weight of a verb's related words in a question ("what does issue 12 say" does not send). */
  questionVerb: number;
  /** score × (1 + phrase × share of the query's word pairs found side by side). */
  phrase: number;
  /** Share of coverage a tool gets for a query word it lacks but another tool of its server has. */
  serverSmoothing: number;
  /** score × serverHint for tools of a server the query names. */
  serverHint: number;
  /** score × destructive for a tool that deletes (its annotation, or its action) when the query does not ask to. */
  destructive: number;
  /** score × (1 + intentHint) for a read-only tool on a read query or a destructive one on a delete query (annotations). */
  intentHint: number;
}

const DEFAULT_WEIGHTS: Readonly<RankWeights> = {
  name: 3,
  title: 2.5,
  lead: 1.5,
  body: 0.6,
  params: 0.25,
  paramDocs: 0.3,
  server: 0.5,
  k1: 1.2,
  b: 0.6,
  prefix: 0.6,
  fuzzy: 0.4,
  related: 0.85,
  coverage: 2,
  coverageField: 1.2,
  nameCoverage: 0.6,
  surface: 0.3,
  action: 0.15,
  leadAction: 0.3,
  question: 0.3,
  questionVerb: 0.5,
  phrase: 0.4,
  serverSmoothing: 0.25,
  serverHint: 3,
  destructive: 0.8,
  intentHint: 0.1,
};

const FIELDS = ['name', 'title', 'lead', 'body', 'params', 'paramDocs', 'server'] as const;
type Field = (typeof FIELDS)[number];

interface Doc {
  server: string;
  /** Stems of the tool's name (and title), server words left out; [0] is its action. */
  nameStems: string[];
  /** The name's words as written (lowercase): "user" is closer to get_user_profile than to get_users. */
  nameWords: string[];
  /** Stem sequences of its texts, each with the weight of a word pair found side by side in it. */
  sequences: Array<[readonly string[], number]>;
  /** Its action reads (get, list, search...). */
  reads: boolean;
  readOnly: boolean;
  destructive: boolean;
}

interface Posting {
  docs: number[];
  /** BM25F pseudo-frequency of the term in each doc. */
  tf: number[];
}

interface Variant {
  term: string;
  weight: number;
}

export interface ScoredTool {
  /** Index of the tool in the list the ranker was built from. */
  doc: number;
  score: number;
  /** What made the score (for tests and tuning). */
  parts: Record<string, number>;
}

/** Plain words that servers may be named after ("everything"): never taken as a server hint. */
const COMMON_WORDS = new Set(['everything', 'anything', 'something', 'nothing', 'all']);
const DERIVED = /(ship|ness|ment|hood|less|ful)$/;
const READ_WORDS = new Set(['get', 'read', 'list', 'show', 'view', 'fetch', 'find', 'search', 'look', 'see']);
const READ_ACTIONS = new Set(
  [...READ_WORDS, 'query', 'retrieve', 'lookup', 'open', 'describe', 'count', 'check', 'download', 'export'].map((w) => stemmer(w)),
);
const DELETE_WORDS = new Set(['delete', 'remove', 'forget', 'erase', 'drop', 'destroy', 'clear']);
const QUESTION_WORDS = new Set([
  'what',
  'which',
  'who',
  'whom',
  'whose',
  'how',
  'when',
  'where',
  'why',
  'did',
  'does',
  'do',
  'is',
  'are',
  'was',
  'were',
  'has',
  'have',
  'can',
]);

/** The first sentence of a description (what the tool does), and the rest. */
function leadAndBody(description: string): [string, string] {
  const match = /^(.{12,300}?[.!?])(\s|$)/su.exec(description);
  if (!match) return description.length <= 300 ? [description, ''] : [description.slice(0, 300), description.slice(300)];
  return [match[1]!, description.slice(match[1]!.length)];
}

/** The choices of a parameter with a few (`Literal["open", "closed"]`). */
function enumValues(type: string | undefined): string[] {
  if (!type?.startsWith('Literal[')) return [];
  return [...type.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function annotationsOf(tool: RankableTool): { title: string; readOnly: boolean; destructive: boolean | undefined } {
  const a = typeof tool.annotations === 'object' && tool.annotations !== null ? (tool.annotations as Record<string, unknown>) : {};
  return {
    title: stringOf(a['title']),
    readOnly: annotationFlag(a, 'readOnlyHint'),
    destructive: typeof a['destructiveHint'] === 'boolean' ? a['destructiveHint'] : undefined,
  };
}

/** "sequentialthinking" -> sequential, thinking, when both halves are words the catalog uses. */
function splitCompound(word: string, known: ReadonlySet<string>): string[] {
  if (word.length < 9) return [word];
  for (let i = 4; i <= word.length - 4; i++) {
    const head = word.slice(0, i);
    const tail = word.slice(i);
    if (known.has(head) && known.has(tail)) return [head, tail];
  }
  return [word];
}

let relatedByStemTable: Map<string, Map<string, number>> | undefined;
/** Stems related to a stem by the intent table ("remembered" finds what "remember" does). */
function relatedByStem(stem: string): ReadonlyMap<string, number> {
  if (!relatedByStemTable) {
    relatedByStemTable = new Map();
    for (const [word, related] of relatedTable()) {
      const key = stemOf(word);
      if (!key) continue;
      const forms = relatedByStemTable.get(key) ?? new Map<string, number>();
      for (const [other, strength] of related) {
        const otherStem = stemOf(other);
        if (otherStem && otherStem !== key && (forms.get(otherStem) ?? 0) < strength) forms.set(otherStem, strength);
      }
      relatedByStemTable.set(key, forms);
    }
  }
  return relatedByStemTable.get(stem) ?? new Map();
}

/** Words of a query that count; the rest is ignored. */
export const MAX_QUERY_WORDS = 48;
const ARTICLES = new Set(['a', 'an', 'the']);
const COPULAS = new Set(['is', 'are', 'was', 'were', 'be', 'been', 'being']);
/** What a question word asks for ("who approved", "where is"), as stems. */
const QUESTION_MEANINGS = new Map(
  Object.entries({ who: ['user', 'people'], where: ['location', 'place'], when: ['time', 'date'] }).map(
    ([word, meaning]) => [word, new Map(meaning.map((m) => [stemOf(m)!, 0.5]))] as const,
  ),
);
/** What a number in a query speaks of ("add 19 and 23"). */
const NUMBER_MEANING = new Map([['number', 0.5]]);

/**
 * The opening of a request that is not a question ("can you", "how do I", "is there a tool
 * to", "I need to", "please"): what follows it is the request, its first word the verb.
 */
const OPENINGS: ReadonlyArray<ReadonlyArray<ReadonlySet<string>>> = [
  [new Set(['please'])],
  [new Set(['can', 'could', 'would', 'will']), new Set(['you', 'i', 'we'])],
  [new Set(['how']), new Set(['do', 'can', 'could', 'should', 'would', 'does']), new Set(['i', 'we', 'you', 'one'])],
  [new Set(['how']), new Set(['to'])],
  [new Set(['is', 'are']), new Set(['there']), new Set(['a', 'any', 'some']), new Set(['tool', 'tools', 'way', 'function'])],
  [new Set(['i', 'we']), new Set(['want', 'need', 'have', 'would', 'd']), new Set(['to', 'like'])],
  [new Set(['i', 'we']), new Set(['want', 'need'])],
  [new Set(['let', 'help']), new Set(['me', 'us'])],
  [new Set(['to'])],
  [new Set(['for', 'that'])],
];

function withoutOpening(words: readonly string[]): string[] {
  let start = 0;
  for (let changed = true; changed && start < words.length;) {
    changed = false;
    for (const opening of OPENINGS) {
      if (start + opening.length >= words.length) continue;
      if (opening.every((set, k) => set.has(words[start + k]!))) {
        start += opening.length;
        changed = true;
        break;
      }
    }
  }
  return words.slice(start);
}

/** Stems of the lexicon's verbs. */
let actionStems: Set<string> | undefined;

/** Per query word index, the stems a phrase it is part of means. */
function phraseMeanings(words: readonly string[]): Map<number, Map<string, number>> {
  const out = new Map<number, Map<string, number>>();
  const table = phraseTable();
  // Articles do not break a phrase ("move the mouse").
  const at = words.flatMap((w, k) => (ARTICLES.has(w) ? [] : [k]));
  for (let j = 0; j + 1 < at.length; j++) {
    const [i, i2] = [at[j]!, at[j + 1]!];
    const meaning = table.get(`${words[i]} ${words[i2]}`);
    if (!meaning) continue;
    // A pair of stop words ("when was", "who are") is a query word of its own: its meaning.
    const targets = [i, i2].filter((k) => stemOf(words[k]!) !== undefined);
    for (const k of targets.length > 0 ? targets : [i]) {
      const forms = out.get(k) ?? new Map<string, number>();
      for (const [word, strength] of meaning) {
        const stem = stemOf(word);
        if (stem && (forms.get(stem) ?? 0) < strength) forms.set(stem, strength);
      }
      out.set(k, forms);
    }
  }
  // A verb's sense by a later word: "open" then "file" reads, "open" then "issue" creates.
  const collocations = collocationTable();
  const lastAt = new Map<string, number>();
  words.forEach((w, k) => lastAt.set(w, k));
  for (let i = 0; i < words.length; i++) {
    for (const { objects, meaning } of collocations.get(words[i]!) ?? []) {
      if (![...objects].some((o) => (lastAt.get(o) ?? -1) > i)) continue;
      const forms = out.get(i) ?? new Map<string, number>();
      for (const [word, strength] of meaning) {
        const stem = stemOf(word);
        if (stem && (forms.get(stem) ?? 0) < strength) forms.set(stem, strength);
      }
      out.set(i, forms);
    }
  }
  return out;
}

export class ToolRanker {
  private readonly weights: RankWeights;
  private readonly docs: Doc[] = [];
  private readonly vocabulary = new SearchableMap<Posting>();
  /** Distinctive words of server names: a query word among them is a hint, not a content word. */
  private readonly serverHints = new Map<string, Set<string>>();
  private readonly serverDocs = new Map<string, number[]>();
  // Scratch space for one query, reused (a query touches only what it resets).
  private readonly score: Float64Array;
  private readonly matched: Float64Array;
  private readonly smooth: Float64Array;
  private readonly best: Float64Array;
  private readonly bestCredit: Float64Array;
  private readonly stamp: Int32Array;
  private readonly mark: Uint32Array;
  private generation = 0;

  constructor(tools: readonly RankableTool[], weights: Partial<RankWeights> = {}) {
    this.weights = { ...DEFAULT_WEIGHTS, ...weights };
    const n = tools.length;
    this.score = new Float64Array(n);
    this.matched = new Float64Array(n);
    this.smooth = new Float64Array(n);
    this.best = new Float64Array(n);
    this.bestCredit = new Float64Array(n);
    this.stamp = new Int32Array(n).fill(-1);
    this.mark = new Uint32Array(n);

    const serverWordsCache = new Map<string, string[]>();
    const serverWordsOf = (server: string): string[] => {
      let words = serverWordsCache.get(server);
      if (!words) {
        words = wordsOf(server);
        serverWordsCache.set(server, words);
      }
      return words;
    };

    // Pass 1: the words of every field, and every word the catalog uses (for compounds).
    const knownWords = new Set<string>();
    const parsed = tools.map((tool) => {
      const [lead, body] = leadAndBody(tool.description);
      const annotations = annotationsOf(tool);
      const words = {
        tool: wordsOf(tool.tool),
        title: wordsOf(`${stringOf(tool.title)} ${annotations.title}`),
        lead: wordsOf(lead),
        body: wordsOf(body),
        enums: tool.params.map((p) => enumValues(p.type).map((v) => wordsOf(v))),
        paramNames: tool.params.map((p) => wordsOf(p.name)),
        paramDocs: tool.params.map((p) => wordsOf(p.description ?? '')),
        server: serverWordsOf(tool.server),
        serverDescription: tool.serverDescription ? wordsOf(tool.serverDescription) : [],
      };
      for (const list of [words.tool, words.lead, words.body, words.server]) for (const w of list) knownWords.add(w);
      return { tool, words, annotations };
    });

    // Pass 2: stems per field, word pairs, and the doc records.
    const fieldTerms: Array<Record<Field, string[]>> = [];
    const lengthSums = Object.fromEntries(FIELDS.map((f) => [f, 0])) as Record<Field, number>;
    for (const { tool, words, annotations } of parsed) {
      const serverWords = new Set(words.server);
      let nameWords = words.tool.filter((w) => !serverWords.has(w));
      if (nameWords.length === 0) nameWords = words.tool;
      nameWords = nameWords.flatMap((w) => splitCompound(w, knownWords));
      const enumStems = words.enums.flatMap((values) => values.map((v) => stemsOf(v)));
      const paramDocStems = words.paramDocs.map((d) => stemsOf(d));
      const terms: Record<Field, string[]> = {
        name: stemsOf(nameWords),
        title: stemsOf(words.title),
        lead: stemsOf(words.lead),
        body: stemsOf(words.body),
        params: [...words.paramNames.flatMap((p) => stemsOf(p)), ...enumStems.flat()],
        paramDocs: paramDocStems.flat(),
        server: stemsOf([...words.server, ...words.serverDescription]),
      };
      fieldTerms.push(terms);
      for (const f of FIELDS) lengthSums[f] += terms[f].length;
      // Where two query words side by side count: fully in the name, title or first sentence;
      // half in the rest of the description or a parameter's choices and description
      // ("REQUEST_CHANGES").
      const sequences: Array<[readonly string[], number]> = [];
      for (const seq of [terms.name, terms.title, terms.lead]) if (seq.length > 1) sequences.push([seq, 1]);
      for (const seq of [terms.body, ...enumStems, ...paramDocStems]) if (seq.length > 1) sequences.push([seq, 0.5]);
      const docs = this.serverDocs.get(tool.server) ?? [];
      docs.push(this.docs.length);
      this.serverDocs.set(tool.server, docs);
      this.docs.push({
        server: tool.server,
        nameStems: [...new Set([...terms.name, ...terms.title])],
        nameWords,
        sequences,
        reads: READ_ACTIONS.has(terms.name[0] ?? ''),
        readOnly: annotations.readOnly,
        destructive: annotations.destructive ?? DELETE_WORDS.has(nameWords[0] ?? ''),
      });
    }

    // Postings with the BM25F pseudo-frequency of each term in each doc.
    const { b } = this.weights;
    const avg = Object.fromEntries(FIELDS.map((f) => [f, Math.max(1, lengthSums[f] / Math.max(1, n))])) as Record<Field, number>;
    fieldTerms.forEach((terms, doc) => {
      const tf = new Map<string, number>();
      for (const f of FIELDS) {
        const weight = this.weights[f] / (1 - b + (b * terms[f].length) / avg[f]);
        for (const term of terms[f]) tf.set(term, (tf.get(term) ?? 0) + weight);
      }
      for (const [term, value] of tf) {
        let posting = this.vocabulary.get(term);
        if (!posting) {
          posting = { docs: [], tf: [] };
          this.vocabulary.set(term, posting);
        }
        posting.docs.push(doc);
        posting.tf.push(value);
      }
    });

    // A server's name word is a hint when other servers' tools hardly use it ("github",
    // "slack", "maps"), unlike "search" in brave-search.
    for (const server of this.serverDocs.keys()) {
      for (const word of serverWordsOf(server)) {
        if (word.length < 3 || /^\d+$/.test(word)) continue;
        const stem = stemOf(word);
        if (!stem) continue;
        const posting = this.vocabulary.get(stem);
        let others = 0;
        for (const d of posting?.docs ?? []) if (!serverWordsOf(this.docs[d]!.server).includes(word)) others++;
        if (others > 0.02 * n) continue;
        const servers = this.serverHints.get(word) ?? new Set<string>();
        servers.add(server);
        this.serverHints.set(word, servers);
      }
    }
  }

  get size(): number {
    return this.docs.length;
  }

  private idf(df: number): number {
    const n = this.docs.length;
    return Math.log(1 + (n - df + 0.5) / (df + 0.5));
  }

  /** The forms of one query word found in the catalog, each with its weight. */
  private variants(word: string, stem: string, extra?: ReadonlyMap<string, number>, relatedScale = 1): Variant[] {
    const w = this.weights;
    const out = new Map<string, number>();
    const add = (term: string, weight: number): void => {
      if ((out.get(term) ?? 0) < weight && this.vocabulary.has(term)) out.set(term, weight);
    };
    add(stem, 1);
    if (stem.length >= 4) {
      let count = 0;
      for (const term of this.vocabulary.atPrefix(stem).keys()) {
        if (term !== stem) add(term, w.prefix);
        if (++count >= 40) break;
      }
    }
    if (word.length >= 6) for (const [term] of this.vocabulary.fuzzyGet(stem, 1)) add(term, w.fuzzy);
    // "relationship" -> relation, "management" -> manage: the word the catalog may use instead.
    const suffix = DERIVED.exec(word);
    if (suffix && word.length - suffix[0].length >= 4) {
      const base = stemOf(word.slice(0, word.length - suffix[0].length));
      if (base) add(base, w.prefix);
    }
    for (const [relatedStem, strength] of relatedByStem(stem)) add(relatedStem, w.related * strength * relatedScale);
    for (const [phraseStem, strength] of extra ?? []) add(phraseStem, w.related * strength);
    return [...out].map(([term, weight]) => ({ term, weight }));
  }

  /** Indices of the best tools for a query, best first. */
  /** `skipServers`: their tools are left out of the results (they still count in the statistics, so the rest rank as they would). */
  rank(query: string, limit: number, skipServers?: ReadonlySet<string>): number[] {
    return this.scored(query, limit, skipServers).map((r) => r.doc);
  }

  /** The best tools for a query, best first, with their scores and what made them. */
  scored(query: string, limit: number, skipServers?: ReadonlySet<string>): ScoredTool[] {
    const w = this.weights;
    // A need is a sentence; a pasted page would cost a posting scan per word.
    // "can you post...", "how do I rename...": the request starts after its polite opening.
    const words = withoutOpening(wordsOf(query).slice(0, MAX_QUERY_WORDS));
    // "what reviews has a PR received", "which files changed": a question asks to read.
    const question = words.length > 0 && QUESTION_WORDS.has(words[0]!);
    const hints: Array<Set<string>> = [];
    const asked: Array<{ word: string; stem: string; index: number; extra?: Map<string, number> }> = [];
    // "how far", "mouse over", "open a file": what a phrase or a verb with its object means
    // is added to the forms of its words.
    const meanings = phraseMeanings(words);
    for (const [index, word] of words.entries()) {
      const servers = COMMON_WORDS.has(word) ? undefined : this.serverHints.get(word);
      if (servers) {
        hints.push(servers);
        continue;
      }
      const meaning = meanings.get(index) ?? (/^\d+$/.test(word) ? NUMBER_MEANING : QUESTION_MEANINGS.get(word));
      // A stop word carrying a phrase's meaning stands for it under a stem no text has.
      const stem = stemOf(word) ?? (meaning ? `\u0000${word}` : undefined);
      if (!stem || /^\p{L}$/u.test(word)) continue;
      let entry = asked.find((a) => a.stem === stem);
      if (!entry) {
        entry = { word, stem, index };
        asked.push(entry);
      }
      if (meaning) {
        entry.extra ??= new Map();
        for (const [term, strength] of meaning) if ((entry.extra.get(term) ?? 0) < strength) entry.extra.set(term, strength);
      }
    }
    if ((asked.length === 0 && hints.length === 0) || limit <= 0) return [];
    const hinted = new Set(hints.flatMap((h) => [...h]));
    // The query's verb, when it starts with one ("open a pull request").
    const leading = !question && asked[0] && asked[0].word === words[0] ? asked[0] : undefined;

    const { score, matched, smooth, best, bestCredit, stamp } = this;
    const k1 = w.k1;
    const touched: number[] = [];
    /** stem -> best weight of any query word's form: what names are matched against. */
    const queryForms = new Map<string, number>();
    const leadingForms = new Map<string, number>();
    let totalWeight = 0;
    const credit = (doc: number, value: number, wordWeight: number, full: number): void => {
      if (score[doc] === 0 && matched[doc] === 0) touched.push(doc);
      score[doc]! += value;
      matched[doc]! += full * wordWeight;
    };

    // A server the query names counts as a word every tool of that server has.
    for (const servers of hints) {
      const docs = [...servers].flatMap((s) => this.serverDocs.get(s) ?? []);
      const idf = this.idf(docs.length);
      const tf = w.name;
      totalWeight += idf;
      for (const doc of docs) credit(doc, (idf * tf * (k1 + 1)) / (tf + k1), idf, 1);
    }

    const smoothed: number[] = [];
    actionStems ??= new Set([...actionWords()].flatMap((v) => stemOf(v) ?? []));
    const verbs = actionStems;
    asked.forEach(({ word, stem, extra, index }, wordIndex) => {
      // "which issues are open": a word after "is"/"are" is a state, not an action; in a
      // question a verb says what was done, not what to do.
      const predicate = index > 0 && COPULAS.has(words[index - 1]!);
      const scale = predicate ? 0 : question && verbs.has(stem) ? w.questionVerb : 1;
      const variants = this.variants(word, stem, extra, scale);
      if (variants.length === 0) return;
      const own = this.vocabulary.get(stem);
      // A word the catalog never uses weighs what its other forms weigh on average.
      const wordWeight = own
        ? this.idf(own.docs.length)
        : variants.reduce((sum, v) => sum + this.idf(this.vocabulary.get(v.term)!.docs.length), 0) / variants.length;
      totalWeight += wordWeight;
      const seen: number[] = [];
      for (const { term, weight } of variants) {
        queryForms.set(term, Math.max(queryForms.get(term) ?? 0, weight));
        if (leading?.word === word) leadingForms.set(term, Math.max(leadingForms.get(term) ?? 0, weight));
        const posting = this.vocabulary.get(term)!;
        const idf = this.idf(posting.docs.length) * weight;
        for (let i = 0; i < posting.docs.length; i++) {
          const doc = posting.docs[i]!;
          const tf = posting.tf[i]!;
          const value = (idf * tf * (k1 + 1)) / (tf + k1);
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
        credit(doc, best[doc]!, wordWeight, bestCredit[doc]!);
        const server = this.docs[doc]!.server;
        if ((serverCredit.get(server) ?? 0) < bestCredit[doc]!) serverCredit.set(server, bestCredit[doc]!);
        stamp[doc] = wordIndex;
        best[doc] = 0;
        bestCredit[doc] = 0;
      }
      // A word one tool of a server has speaks a little for the server's other tools.
      if (w.serverSmoothing > 0) {
        for (const [server, c] of serverCredit) {
          for (const doc of this.serverDocs.get(server) ?? []) {
            if (stamp[doc] === wordIndex) continue;
            if (smooth[doc] === 0) smoothed.push(doc);
            smooth[doc]! += c * wordWeight;
          }
        }
      }
    });

    // Query words side by side found side by side in a tool's text: only tools with both words
    // are looked at.
    const phrases = new Map<number, number>();
    const pairCount = asked.length - 1;
    for (let i = 1; i < asked.length; i++) {
      const first = asked[i - 1]!.stem;
      const second = asked[i]!.stem;
      const a = this.vocabulary.get(first);
      const b = this.vocabulary.get(second);
      if (!a || !b) continue;
      const [small, large] = a.docs.length <= b.docs.length ? [a, b] : [b, a];
      if (this.generation === 0xffffffff) {
        this.mark.fill(0);
        this.generation = 0;
      }
      const generation = ++this.generation;
      for (const doc of large.docs) this.mark[doc] = generation;
      for (const doc of small.docs) {
        if (this.mark[doc] !== generation) continue;
        let weight = 0;
        for (const [seq, w2] of this.docs[doc]!.sequences) {
          if (w2 <= weight) continue;
          for (let k = 1; k < seq.length; k++) {
            if (seq[k - 1] === first && seq[k] === second) {
              weight = w2;
              break;
            }
          }
        }
        if (weight > 0) phrases.set(doc, (phrases.get(doc) ?? 0) + weight);
      }
    }
    const said = new Set(words);
    const readIntent = question || asked.some((a) => READ_WORDS.has(a.word));
    const deleteIntent = asked.some((a) => DELETE_WORDS.has(a.word));

    const partsOf = (doc: number): Record<string, number> => {
      const d = this.docs[doc]!;
      const coverage = (matched[doc]! + w.serverSmoothing * smooth[doc]!) / totalWeight;
      let named = 0;
      let surface = 0;
      let action = 0;
      let leadAction = 0;
      const verb = d.nameStems[0];
      if (verb !== undefined) {
        for (const stem of d.nameStems) named += queryForms.get(stem) ?? 0;
        named /= d.nameStems.length;
        // A question has no verb of its own to match ("when was this file last modified").
        action = question ? 0 : (queryForms.get(verb) ?? 0);
        leadAction = leadingForms.get(verb) ?? 0;
      }
      if (d.nameWords.length > 0) {
        for (const word of d.nameWords) if (said.has(word)) surface++;
        surface /= d.nameWords.length;
      }
      const phrase = pairCount > 0 ? (phrases.get(doc) ?? 0) / pairCount : 0;
      const hint = hinted.has(d.server) ? w.serverHint : 1;
      let intent = 1;
      if (question && d.reads) intent *= 1 + w.question;
      if ((readIntent && d.readOnly) || (deleteIntent && d.destructive)) intent *= 1 + w.intentHint;
      // A tool that deletes is offered first only when the query asks to delete.
      if (!deleteIntent && d.destructive) intent *= w.destructive;
      const total =
        score[doc]! *
        Math.pow(Math.min(1, coverage), w.coverage) *
        (1 + w.nameCoverage * named) *
        (1 + w.surface * surface) *
        (1 + w.action * action) *
        (1 + w.leadAction * leadAction) *
        (1 + w.phrase * phrase) *
        hint *
        intent;
      return { total, bm25: score[doc]!, coverage, named, surface, action, leadAction, phrase, hint, intent };
    };

    // Keep the best `limit` (ties: catalog order) without sorting every touched tool.
    const top: Array<{ doc: number; score: number }> = [];
    if (totalWeight > 0) {
      for (const doc of touched) {
        if (skipServers?.has(this.docs[doc]!.server)) continue;
        const s = partsOf(doc)['total']!;
        if (
          top.length === limit &&
          (s < top[top.length - 1]!.score || (s === top[top.length - 1]!.score && doc > top[top.length - 1]!.doc))
        )
          continue;
        let i = top.length;
        while (i > 0 && (top[i - 1]!.score < s || (top[i - 1]!.score === s && top[i - 1]!.doc > doc))) i--;
        top.splice(i, 0, { doc, score: s });
        if (top.length > limit) top.pop();
      }
    }
    const result = top.map(({ doc, score: s }) => ({ doc, score: s, parts: partsOf(doc) }));
    for (const doc of touched) {
      score[doc] = 0;
      matched[doc] = 0;
    }
    for (const doc of smoothed) smooth[doc] = 0;
    for (const doc of touched) stamp[doc] = -1;
    for (const doc of smoothed) stamp[doc] = -1;
    return result;
  }
}
