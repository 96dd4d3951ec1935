// Words of names and descriptions, as the tool search and the snippet store index them: names
// split at case and punctuation, lowercased, stemmed, stop words dropped.
import { stemmer } from 'stemmer';

/** "createPullRequest", "create_pull-request" -> "create pull request". */
export function splitWords(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/[_\-./:]+/g, ' ');
}

export const STOP_WORDS = new Set([
  'a',
  'an',
  'the',
  'to',
  'of',
  'for',
  'in',
  'on',
  'and',
  'or',
  'with',
  'by',
  'from',
  'is',
  'it',
  'this',
  'that',
  'be',
  'as',
  'at',
  'i',
  'me',
  'my',
  'some',
  'all',
  'we',
  'our',
  'you',
  'your',
  'its',
  'their',
  'these',
  'those',
  'there',
  'what',
  'which',
  'who',
  'how',
  'when',
  'where',
  'do',
  'does',
  'did',
  'can',
  'could',
  'please',
  'are',
  'was',
  'were',
  'been',
  'has',
  'have',
  'into',
  'about',
  'up',
]);

/** Lowercase words of a text, names split ("get_fileInfo" -> get, file, info). */
export function wordsOf(text: string): string[] {
  return splitWords(text)
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** Words the stemmer folds into another word's stem ("news" -> new). */
const OWN_STEMS = new Map([['news', 'news']]);
const stems = new Map<string, string>(OWN_STEMS);
/** The stem of a lowercase word, or undefined for a stop word. */
export function stemOf(word: string): string | undefined {
  if (STOP_WORDS.has(word)) return undefined;
  let stem = stems.get(word);
  if (stem === undefined) {
    stem = stemmer(word);
    if (stems.size < 50_000) stems.set(word, stem);
  }
  return stem;
}
