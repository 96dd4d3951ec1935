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

/** What a key word is to the request: its verb, the head of what it acts on, a name before that head. */
export type KeyRole = 'verb' | 'head' | 'name';

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
  /** Where its key words are in `words`: its verb and the head of what it acts on ("set the THERMOSTAT to 21"). */
  keys: Map<number, KeyRole>;
  readIntent: boolean;
  deleteIntent: boolean;
}

/** How much of a query's text is read for values (MAX_QUERY_WORDS words fit in it). */
const MAX_VALUE_TEXT = 2_000;
/** Pieces of a word that a contraction leaves ("I'll", "we've"). */
const CONTRACTIONS = new Set(['ll', 've', 're', 'nt']);
/** Quoted text: 'deploy finished', "hello". */
const QUOTED = /(?:^|[\s(])(['"\u2018\u201c])(.+?)['"\u2019\u201d](?=$|[\s.,;:!?)])/gu;

/**
 * The words of a request that are values, not what it asks for: quoted text, a token with a
 * digit or inner punctuation (a path, a file, an address, a URL, "ec2", "#general"), a name
 * with 's ("Tom's"), what contractions leave; and apart, its names: words written with a
 * capital past the first (a person, a place, or a service: "my Gmail inbox").
 */
function valueWords(query: string): { values: Set<string>; names: Set<string> } {
  const values = new Set<string>(CONTRACTIONS);
  const names = new Set<string>();
  const unquoted = query.replace(QUOTED, (_, _quote: string, text: string) => {
    for (const w of wordsOf(text)) values.add(w);
    return ' ';
  });
  const tokens = unquoted.split(/\s+/).map((t) => t.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, ''));
  tokens.forEach((token, k) => {
    // A name with 's is a person's or a place's ("Tom's thread").
    const owner = /^\p{Lu}.*['\u2019]s$/u.test(token);
    if (owner || /\p{N}|[^\p{L}\p{N}'\u2019-]/u.test(token.replace(/['\u2019]s$/u, ''))) for (const w of wordsOf(token)) values.add(w);
    else if (k > 0 && /^\p{Lu}/u.test(token)) for (const w of wordsOf(token)) names.add(w);
  });
  for (const w of values) names.delete(w);
  return { values, names };
}

/** Words that end the noun phrase a verb acts on: prepositions, conjunctions, a name's lead-in. */
const PHRASE_ENDS = new Set([
  ...'to in on for from with at by into onto of about as that than via under near between'.split(' '),
  ...'and or called named titled saying using if so then'.split(' '),
]);
/** Words before a verb that are not one ("just list the files", "now read it"). */
const FILLERS = new Set('just now also then quickly first simply kindly ok okay hey hi finally actually'.split(' '));
/** Words between a verb and what it acts on: "look UP", "turn OFF the", "skip TO the". */
const LEAD_INS = new Set(['up', 'off', 'out', 'down', 'back', 'over', 'to', 'for', 'on', 'in', 'at', 'into', 'about']);

/**
 * The query's key words, by index: its verb (the first word when it is not a question) and the
 * last word of the noun phrase after it (its head: "the staging EC2 INSTANCE"), values and stop
 * words left out. A request no tool serves usually has one of them missing from every tool.
 */
function keyWords(
  words: readonly string[],
  question: boolean,
  { values, names }: { values: ReadonlySet<string>; names: ReadonlySet<string> },
): Map<number, KeyRole> {
  const keys = new Map<number, KeyRole>();
  let i = 0;
  while (i < words.length && FILLERS.has(words[i]!)) i++;
  if (question) while (i < words.length && stemOf(words[i]!) === undefined) i++;
  else if (words.length > 0 && !values.has(words[i]!)) keys.set(i++, 'verb');
  while (i < words.length && (LEAD_INS.has(words[i]!) || (stemOf(words[i]!) === undefined && !PHRASE_ENDS.has(words[i]!)))) i++;
  let head = -1;
  const named: number[] = [];
  for (; i < words.length && !PHRASE_ENDS.has(words[i]!); i++) {
    const word = words[i]!;
    if (stemOf(word) === undefined || values.has(word) || /^\p{L}$/u.test(word)) continue;
    if (names.has(word)) named.push(i);
    else head = i;
  }
  if (head >= 0) keys.set(head, 'head');
  // A name before the head says whose it is: "my GMAIL inbox", "a JIRA ticket".
  for (const k of named) if (k < head) keys.set(k, 'name');
  return keys;
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
    // Values are looked for where the words that count are: a pasted page is not read through.
    keys: keyWords(words, question, valueWords(query.slice(0, MAX_VALUE_TEXT))),
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
