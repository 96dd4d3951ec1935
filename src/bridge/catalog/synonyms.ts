// How agents phrase intents vs how tools are named: "open a PR" is create_pull_request,
// "forget" is delete, "press" is click, "how far" asks for a distance. Query words gain the
// related words of the lexicon (lexicon.ts), weighted lower than the words the agent used,
// before the search. Verbs of one operation (remove = delete) and short forms (pr = pull request)
// count as the word itself, things said in other words (folder = directory) a little less,
// looser topics (memory ~ fact ~ note) half; the weight of a related word as a whole is
// RankWeights.related.
import { COLLOCATIONS, PHRASES, SAME_ACTION, SAME_THING, SHORTHANDS, TOPICS } from './lexicon.ts';

/** Strength of a related word, relative to the word itself. */
const ACTION_STRENGTH = 1;
const THING_STRENGTH = 0.8;
const TOPIC_STRENGTH = 0.5;
/** A phrase's meaning ("how far" -> distance) is what the agent asked for. */
const PHRASE_STRENGTH = 1;

const RELATED = new Map<string, Map<string, number>>();
function addGroups(groups: readonly string[][], strength: number): void {
  for (const group of groups) {
    for (const word of group) {
      const related = RELATED.get(word) ?? new Map<string, number>();
      for (const other of group) if (other !== word && (related.get(other) ?? 0) < strength) related.set(other, strength);
      RELATED.set(word, related);
    }
  }
}
addGroups(SAME_ACTION, ACTION_STRENGTH);
addGroups(SAME_THING, THING_STRENGTH);
addGroups(TOPICS, TOPIC_STRENGTH);
// A short form means its long form fully ("pr" is a pull request); not the other way round.
for (const [short, long] of SHORTHANDS) {
  const related = RELATED.get(short) ?? new Map<string, number>();
  for (const word of long) related.set(word, ACTION_STRENGTH);
  RELATED.set(short, related);
}

const PHRASE_TABLE = new Map<string, ReadonlyMap<string, number>>(
  PHRASES.map(([phrase, words]) => [phrase, new Map(words.map((w) => [w, PHRASE_STRENGTH]))]),
);

const ACTION_WORDS: ReadonlySet<string> = new Set(SAME_ACTION.flat());

/** The lexicon's verbs of deleting ("remove", "wipe", "purge"...). */
export function deleteVerbs(): readonly string[] {
  return SAME_ACTION.find((group) => group.includes('delete')) ?? ['delete'];
}

/** The verbs of the lexicon (lowercase words). */
export function actionWords(): ReadonlySet<string> {
  return ACTION_WORDS;
}

/** Every word of the table with its related words and their strengths. */
export function relatedTable(): ReadonlyMap<string, ReadonlyMap<string, number>> {
  return RELATED;
}

/** Two-word phrases ("how far", lowercase, one space) with the words they mean. */
export function phraseTable(): ReadonlyMap<string, ReadonlyMap<string, number>> {
  return PHRASE_TABLE;
}

/** A verb's sense by its object: verb -> [objects, the words that sense means]. */
const COLLOCATION_TABLE = new Map<string, Array<{ objects: ReadonlySet<string>; meaning: ReadonlyMap<string, number> }>>();
for (const [verb, objects, words] of COLLOCATIONS) {
  const senses = COLLOCATION_TABLE.get(verb) ?? [];
  senses.push({ objects: new Set(objects), meaning: new Map(words.map((w) => [w, PHRASE_STRENGTH])) });
  COLLOCATION_TABLE.set(verb, senses);
}

/** Verbs whose sense depends on a later word of the query ("open a file" reads). */
export function collocationTable(): ReadonlyMap<
  string,
  ReadonlyArray<{ objects: ReadonlySet<string>; meaning: ReadonlyMap<string, number> }>
> {
  return COLLOCATION_TABLE;
}
