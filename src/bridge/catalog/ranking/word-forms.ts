// The forms of one query word that the catalog uses, each weighted against the word itself:
// the word, a longer word it starts ("config" -> configuration), a one-letter typo, the base of
// a derived word (relationship -> relation), a related word from the concept lexicon
// (synonyms.ts), and what a phrase it is part of means (query.ts).
import type SearchableMap from 'minisearch/SearchableMap';
import { stemOf } from '../../../shared/words.ts';
import { relatedTable } from '../synonyms.ts';
import type { RankWeights } from './weights.ts';

export interface Variant {
  term: string;
  weight: number;
}

const DERIVED = /(ship|ness|ment|hood|less|ful)$/;

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

/** The forms of one query word found in `vocabulary`, each with its weight. */
export function wordForms(
  vocabulary: SearchableMap<unknown>,
  w: RankWeights,
  word: string,
  stem: string,
  extra?: ReadonlyMap<string, number>,
  relatedScale = 1,
): Variant[] {
  const out = new Map<string, number>();
  const add = (term: string, weight: number): void => {
    if ((out.get(term) ?? 0) < weight && vocabulary.has(term)) out.set(term, weight);
  };
  add(stem, 1);
  if (stem.length >= 4) {
    let count = 0;
    for (const term of vocabulary.atPrefix(stem).keys()) {
      if (term !== stem) add(term, w.prefix);
      if (++count >= 40) break;
    }
  }
  if (word.length >= 6) for (const [term] of vocabulary.fuzzyGet(stem, 1)) add(term, w.fuzzy);
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
