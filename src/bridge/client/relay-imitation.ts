// What would let a proxied server's question pass for the bridge's own confirmation: a form field
// whose name folds to one of the confirmation's (ignoring case, invisible and format characters,
// accents, and compatibility forms such as full-width letters), or the confirmation's own wording anywhere
// in what the user is shown. Both sets come from the confirmation itself (confirmations.ts), so
// they follow it when its form changes; the network question's (network-questions.ts) are the bridge's own too.
import { confirmationFields, confirmationWording } from './confirmations.ts';
import { networkQuestionFields, networkQuestionWording } from './network-questions.ts';
import { escapeUnseen } from '../../shared/shown-text.ts';

/** Characters a name is compared without: controls, format (bidi, zero-width), separators, default-ignorables. */
const IGNORED_IN_NAMES = /[\p{Cc}\p{Cf}\p{Z}\p{Default_Ignorable_Code_Point}]/gu;
/** Characters that show as nothing and so may sit inside a word unseen. */
const UNSEEN_IN_WORDS = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;

/** Case folded as far as JavaScript can (upper then lower: "ß" and "ss", dotless "ı" and "i" meet). */
function caseFolded(text: string): string {
  return text.toUpperCase().toLowerCase();
}

/**
 * A field name as compared with the confirmation's: compatibility forms decomposed (NFKD), ignored
 * characters and combining marks (accents, the dot of "İ" lowercased) removed, case folded.
 */
export function foldedName(name: string): string {
  const plain = (text: string) => text.normalize('NFKD').replace(IGNORED_IN_NAMES, '').replace(/\p{M}/gu, '').normalize('NFC');
  return plain(caseFolded(plain(name)));
}

/**
 * Text as compared with the confirmation's wording: unseen characters removed, NFKC, camelCase
 * words apart, case folded, every run of other than letters and digits one space; padded, so
 * that a phrase matches whole words only.
 */
export function foldedWords(text: string): string {
  const plain = text
    .replace(UNSEEN_IN_WORDS, '')
    .normalize('NFKC')
    .replace(/(\p{Ll})(\p{Lu})/gu, '$1 $2');
  const words = caseFolded(plain)
    .normalize('NFKC')
    .replace(UNSEEN_IN_WORDS, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
  return ` ${words} `;
}

/** Clauses of the confirmation's wording (split at punctuation, three words or more), folded. */
function wordingClauses(): { clause: string; folded: string }[] {
  return [...confirmationWording(), ...networkQuestionWording()]
    .flatMap((text) => text.split(/[.;:,!?]/))
    .map((clause) => ({ clause: clause.trim(), folded: foldedWords(clause) }))
    .filter(({ folded }) => folded.trim().split(' ').length >= 3);
}

/** Why a relayed form's field names are refused: the first that folds to a field of the confirmation. */
export function reservedFieldReason(names: Iterable<string>): string | undefined {
  const ours = new Map([...confirmationFields(), ...networkQuestionFields()].map((field) => [foldedName(field), field]));
  for (const name of names) {
    const field = ours.get(foldedName(name));
    if (field === undefined) continue;
    return (
      `the form asks for a field named "${escapeUnseen(name)}", which only the bridge's own confirmation uses ("${field}"; ` +
      'names are compared ignoring case, accents, invisible characters and compatibility forms); name the field otherwise'
    );
  }
  return undefined;
}

/** Every string in a value (a form's schema: titles, descriptions, option labels, defaults). */
function stringsIn(value: unknown, found: string[] = []): string[] {
  if (typeof value === 'string') found.push(value);
  else if (Array.isArray(value)) for (const item of value) stringsIn(item, found);
  else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) stringsIn(item, found);
  return found;
}

/** Why a server's question is refused: it uses the confirmation's wording (in its message or anywhere in its form). */
export function confirmationWordingReason(message: string, requestedSchema?: unknown): string | undefined {
  const texts = [message, ...stringsIn(requestedSchema)].map(foldedWords);
  for (const { clause, folded } of wordingClauses()) {
    if (!texts.some((text) => text.includes(folded))) continue;
    return `the question uses the wording of the bridge's own confirmation ("${clause}"), so it could pass for it; reword the question`;
  }
  return undefined;
}
