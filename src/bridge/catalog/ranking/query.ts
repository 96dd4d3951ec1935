// What a search query asks, read once before any tool is scored: its words after a polite
// opening ("can you", "how do I"), whether it is a question, the server names it uses as hints,
// each content word with its stem and what a phrase around it means ("how far" -> distance,
// "open a file" -> read), its verb, and whether it asks to read or to delete.
import { stemOf, wordsOf } from '../../../shared/words.ts';
import { actionWords, collocationTable, deleteVerbs, phraseTable } from '../synonyms.ts';
import type { RankWeights } from './weights.ts';

/** Plain words that servers may be named after ("everything"): never taken as a server hint. */
const COMMON_WORDS = new Set(['everything', 'anything', 'something', 'nothing', 'all']);
export const READ_WORDS = new Set(['get', 'read', 'list', 'show', 'view', 'fetch', 'find', 'search', 'look', 'see']);
/** Words that ask to delete (or, as a tool's action, say that it deletes): the lexicon's verbs of deleting. */
export const DELETE_WORDS: ReadonlySet<string> = new Set(deleteVerbs());
/** Their stems: "Removes", "deleting". */
export const DELETE_STEMS: ReadonlySet<string> = new Set([...DELETE_WORDS].flatMap((w) => stemOf(w) ?? []));
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

/** A content word of the query (the first of its stem), with what a phrase around it means. */
export interface AskedWord {
  word: string;
  stem: string;
  /** Where it is in the query's words. */
  index: number;
  /** Stems a phrase or a verb's object adds to its forms, each with its strength. */
  extra?: Map<string, number>;
}

export interface RankQuery {
  /** The query's words after its opening, at most MAX_QUERY_WORDS. */
  words: string[];
  /** It starts with a question word: it asks to read ("which files changed"). */
  question: boolean;
  /** Per server-name word of the query, the servers it names. */
  hints: Array<Set<string>>;
  /** Every server the query names. */
  hinted: Set<string>;
  asked: AskedWord[];
  /** The query's verb, when it starts with one ("open a pull request"). */
  leading: AskedWord | undefined;
  /** The query's words as written. */
  said: Set<string>;
  readIntent: boolean;
  deleteIntent: boolean;
}

/** Reads a query; `serverHints` are the distinctive words of server names (see indexing.ts). */
export function readQuery(query: string, serverHints: ReadonlyMap<string, Set<string>>): RankQuery {
  // A need is a sentence; a pasted page would cost a posting scan per word.
  // "can you post...", "how do I rename...": the request starts after its polite opening.
  const words = withoutOpening(wordsOf(query).slice(0, MAX_QUERY_WORDS));
  // "what reviews has a PR received", "which files changed": a question asks to read.
  const question = words.length > 0 && QUESTION_WORDS.has(words[0]!);
  const hints: Array<Set<string>> = [];
  const asked: AskedWord[] = [];
  // "how far", "mouse over", "open a file": what a phrase or a verb with its object means
  // is added to the forms of its words.
  const meanings = phraseMeanings(words);
  for (const [index, word] of words.entries()) {
    const servers = COMMON_WORDS.has(word) ? undefined : serverHints.get(word);
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
  return {
    words,
    question,
    hints,
    hinted: new Set(hints.flatMap((h) => [...h])),
    asked,
    leading: !question && asked[0] && asked[0].word === words[0] ? asked[0] : undefined,
    said: new Set(words),
    readIntent: question || asked.some((a) => READ_WORDS.has(a.word)),
    // "wipe an entity", "get rid of the old notes": a delete verb, or a phrase that means one.
    deleteIntent: asked.some((a) => DELETE_WORDS.has(a.word) || [...(a.extra?.keys() ?? [])].some((stem) => DELETE_STEMS.has(stem))),
  };
}

/**
 * How much a word's related forms count: none for a word after "is"/"are" ("which issues are
 * open": a state, not an action), less for a verb in a question (it says what was done, not
 * what to do).
 */
export function relatedScale(query: RankQuery, { stem, index }: AskedWord, weights: RankWeights): number {
  actionStems ??= new Set([...actionWords()].flatMap((v) => stemOf(v) ?? []));
  const predicate = index > 0 && COPULAS.has(query.words[index - 1]!);
  return predicate ? 0 : query.question && actionStems.has(stem) ? weights.questionVerb : 1;
}
