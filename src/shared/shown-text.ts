// Text a proxied server chose (elicitation messages, form field titles, tool titles) as the user
// is shown it: without control or invisible formatting characters, capped, and where it must be
// one line (titles, the first line of a question) without line breaks, so that it cannot draw a
// line of the bridge's own, such as its confirmation, beneath the server's name.
// Text a person must read exactly (what a workspace asks to run) keeps those characters, escaped.

/** Control characters but the line feed, invisible format characters (bidi overrides, zero-width). */
const HIDDEN = /[\p{Cc}\p{Cf}]/gu;
/** Line breaks of every kind. */
const BREAKS = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/g;

function capped(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** One line: breaks and tabs become spaces, hidden characters go, runs of spaces shrink; at most `max` characters. */
export function oneLine(text: string, max: number): string {
  return capped(text.replace(BREAKS, ' ').replace(/\t/g, ' ').replace(HIDDEN, '').replace(/ {2,}/g, ' ').trim(), max);
}

/** Several lines: breaks kept as line feeds, other hidden characters gone; at most `max` characters. */
export function lines(text: string, max: number): string {
  return capped(
    text
      .replace(BREAKS, '\n')
      .replace(/\t/g, ' ')
      .replace(/[^\S\n]*\n/g, '\n')
      .replace(/(?!\n)[\p{Cc}\p{Cf}]/gu, '')
      .trim(),
    max,
  );
}

/**
 * A server's message as a question of that server: its first line always begins with the prefix,
 * and the server's text follows it on that line (leading blank lines dropped).
 */
export function prefixedMessage(prefix: string, message: string, maxFirstLine: number, maxAll: number): string {
  const body = lines(message, maxAll);
  const cut = body.indexOf('\n');
  const first = oneLine(cut < 0 ? body : body.slice(0, cut), maxFirstLine);
  const rest = cut < 0 ? '' : body.slice(cut + 1).trim();
  return rest ? `${prefix}${first}\n${rest}` : `${prefix}${first}`;
}

/**
 * Characters that do not show as themselves: controls (line breaks too), format characters (bidi
 * overrides, zero-width), separators, private-use and lone surrogates, spaces other than the
 * space, and invisible fillers and variation selectors.
 */
const UNSEEN =
  // eslint-disable-next-line no-misleading-character-class -- each invisible character is listed on its own, combining ones included
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\u00A0\u1680\u2000-\u200A\u202F\u205F\u3000\u034F\u115F\u1160\u17B4\u17B5\u180B-\u180F\u3164\uFE00-\uFE0F\uFFA0\u{E0100}-\u{E01EF}]/gu;
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Text a person must see exactly (what a workspace asks to run): every character that would not
 * show as itself is written as an escape (`\n`, `\u{202E}`), so that it cannot hide or reorder
 * what surrounds it. Escapes are plain ASCII, so escaping twice changes nothing more.
 */
export function escapeUnseen(text: string): string {
  return text.replace(UNSEEN, (c) => NAMED[c] ?? `\\u{${c.codePointAt(0)!.toString(16).toUpperCase()}}`);
}
