// The ranker's index of a catalog, built once per catalog: per tool, the stems of its fields
// (name words without the server's words, title, the description's first sentence, the rest of
// it, parameter names and choices, parameter descriptions, the server), their BM25F
// pseudo-frequencies in one posting list per stem, its name's words and action, its word
// sequences (for phrases), whether it reads or deletes; and the words of server names that are
// hints ("github", "slack").
import SearchableMap from 'minisearch/SearchableMap';
import { stemmer } from 'stemmer';
import { stemOf, wordsOf } from '../../../shared/words.ts';
import { annotationFlag } from '../tool-hints.ts';
import { DELETE_STEMS, READ_WORDS } from './query.ts';
import { servicesMentioned } from './services.ts';
import type { RankWeights } from './weights.ts';

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

const FIELDS = ['name', 'title', 'lead', 'body', 'params', 'paramDocs', 'server'] as const;
type Field = (typeof FIELDS)[number];

export interface Doc {
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

export interface Posting {
  docs: number[];
  /** BM25F pseudo-frequency of the term in each doc. */
  tf: number[];
}

export interface RankIndex {
  docs: Doc[];
  /** stem -> its posting. */
  vocabulary: SearchableMap<Posting>;
  /** Distinctive words of server names: a query word among them is a hint, not a content word. */
  serverHints: Map<string, Set<string>>;
  /** server -> its tools' docs. */
  serverDocs: Map<string, number[]>;
  /** The well-known services its servers and tools mention (services.ts): a request naming another is not served. */
  services: Set<string>;
}

const READ_ACTIONS = new Set(
  [...READ_WORDS, 'query', 'retrieve', 'lookup', 'open', 'describe', 'count', 'check', 'download', 'export'].map((w) => stemmer(w)),
);

function stemsOf(words: readonly string[]): string[] {
  const out: string[] = [];
  for (const word of words) {
    const stem = stemOf(word);
    if (stem) out.push(stem);
  }
  return out;
}

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

interface Annotations {
  title: string;
  readOnly: boolean;
  destructive: boolean | undefined;
}

function annotationsOf(tool: RankableTool): Annotations {
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

/** A server's name words, each server's read once. */
function serverWordsReader(): (server: string) => string[] {
  const cache = new Map<string, string[]>();
  return (server) => {
    let words = cache.get(server);
    if (!words) {
      words = wordsOf(server);
      cache.set(server, words);
    }
    return words;
  };
}

interface ParsedTool {
  tool: RankableTool;
  annotations: Annotations;
  words: {
    tool: string[];
    title: string[];
    lead: string[];
    body: string[];
    enums: string[][][];
    paramNames: string[][];
    paramDocs: string[][];
    server: string[];
    serverDescription: string[];
  };
}

/** Pass 1: the words of every field, and every word the catalog uses (for compounds). */
function parseTools(
  tools: readonly RankableTool[],
  serverWordsOf: (server: string) => string[],
): { parsed: ParsedTool[]; knownWords: Set<string> } {
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
  return { parsed, knownWords };
}

/** Pass 2: one tool's stems per field, its word pairs, and its doc record. */
function docOf({ tool, words, annotations }: ParsedTool, knownWords: ReadonlySet<string>): { terms: Record<Field, string[]>; doc: Doc } {
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
  // Where two query words side by side count: fully in the name, title or first sentence;
  // half in the rest of the description or a parameter's choices and description
  // ("REQUEST_CHANGES").
  const sequences: Array<[readonly string[], number]> = [];
  for (const seq of [terms.name, terms.title, terms.lead]) if (seq.length > 1) sequences.push([seq, 1]);
  for (const seq of [terms.body, ...enumStems, ...paramDocStems]) if (seq.length > 1) sequences.push([seq, 0.5]);
  const doc: Doc = {
    server: tool.server,
    nameStems: [...new Set([...terms.name, ...terms.title])],
    nameWords,
    sequences,
    reads: READ_ACTIONS.has(terms.name[0] ?? ''),
    readOnly: annotations.readOnly,
    // Its annotation when it has one; else its action, or its description's first word, deletes
    // ("purge_cache", "cleanup: Removes old builds").
    destructive: annotations.destructive ?? (DELETE_STEMS.has(terms.name[0] ?? '') || DELETE_STEMS.has(stemOf(words.lead[0] ?? '') ?? '')),
  };
  return { terms, doc };
}

/** Postings with the BM25F pseudo-frequency of each term in each doc. */
function postingsOf(fieldTerms: ReadonlyArray<Record<Field, string[]>>, weights: RankWeights): SearchableMap<Posting> {
  const vocabulary = new SearchableMap<Posting>();
  const n = fieldTerms.length;
  const lengthSums = Object.fromEntries(FIELDS.map((f) => [f, 0])) as Record<Field, number>;
  for (const terms of fieldTerms) for (const f of FIELDS) lengthSums[f] += terms[f].length;
  const { b } = weights;
  const avg = Object.fromEntries(FIELDS.map((f) => [f, Math.max(1, lengthSums[f] / Math.max(1, n))])) as Record<Field, number>;
  fieldTerms.forEach((terms, doc) => {
    const tf = new Map<string, number>();
    for (const f of FIELDS) {
      const weight = weights[f] / (1 - b + (b * terms[f].length) / avg[f]);
      for (const term of terms[f]) tf.set(term, (tf.get(term) ?? 0) + weight);
    }
    for (const [term, value] of tf) {
      let posting = vocabulary.get(term);
      if (!posting) {
        posting = { docs: [], tf: [] };
        vocabulary.set(term, posting);
      }
      posting.docs.push(doc);
      posting.tf.push(value);
    }
  });
  return vocabulary;
}

/**
 * A server's name word is a hint when other servers' tools hardly use it ("github", "slack",
 * "maps"), unlike "search" in brave-search.
 */
function serverHintsOf(
  { docs, vocabulary, serverDocs }: Omit<RankIndex, 'serverHints' | 'services'>,
  serverWordsOf: (server: string) => string[],
): Map<string, Set<string>> {
  const hints = new Map<string, Set<string>>();
  for (const server of serverDocs.keys()) {
    for (const word of serverWordsOf(server)) {
      if (word.length < 3 || /^\d+$/.test(word)) continue;
      const stem = stemOf(word);
      if (!stem) continue;
      const posting = vocabulary.get(stem);
      let others = 0;
      for (const d of posting?.docs ?? []) if (!serverWordsOf(docs[d]!.server).includes(word)) others++;
      if (others > 0.02 * docs.length) continue;
      const servers = hints.get(word) ?? new Set<string>();
      servers.add(server);
      hints.set(word, servers);
    }
  }
  return hints;
}

export function buildIndex(tools: readonly RankableTool[], weights: RankWeights): RankIndex {
  const serverWordsOf = serverWordsReader();
  const { parsed, knownWords } = parseTools(tools, serverWordsOf);
  const docs: Doc[] = [];
  const serverDocs = new Map<string, number[]>();
  const fieldTerms: Array<Record<Field, string[]>> = [];
  for (const tool of parsed) {
    const { terms, doc } = docOf(tool, knownWords);
    fieldTerms.push(terms);
    const ofServer = serverDocs.get(doc.server) ?? [];
    ofServer.push(docs.length);
    serverDocs.set(doc.server, ofServer);
    docs.push(doc);
  }
  const vocabulary = postingsOf(fieldTerms, weights);
  const services = servicesMentioned(
    parsed.flatMap(({ words: w }) => [
      w.tool,
      w.title,
      w.lead,
      w.body,
      w.server,
      w.serverDescription,
      ...w.paramNames,
      ...w.paramDocs,
      ...w.enums.flat(),
    ]),
  );
  return { docs, vocabulary, serverDocs, serverHints: serverHintsOf({ docs, vocabulary, serverDocs }, serverWordsOf), services };
}
