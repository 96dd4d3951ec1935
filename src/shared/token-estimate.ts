// Tokens of a text, estimated without a tokenizer's vocabulary: the token meter's count (what
// the model received, what a direct tool listing would cost). The o200k vocabulary would add
// about 2.8 MB to each bundle and 70 MB to each bridge's memory, so the text is cut into the
// pieces o200k's pre-tokenizer makes (a word with its leading space, up to three digits, a run
// of punctuation, white space), and each piece counted: a word as one token per 8 characters, a
// run of punctuation as one per 4, the rest as one. Against o200k itself (gpt-tokenizer, as the
// benchmarks count) it stays within about 10% on tool listings, code, prose and program output
// (test/unit/token-meter.test.ts); characters / 4 is off by 40% on output full of numbers.

/** What the estimate is named in the run log and the views. */
export const TOKEN_ESTIMATE = 'o200k-estimate';

/** How the count is made, in a line a person reads beside the figures. */
export const TOKEN_ESTIMATE_TEXT = 'tokens are estimated (o200k pieces, within about 10% of o200k)';

const CONTRACTION = String.raw`(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?`;
const PIECES = new RegExp(
  [
    String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+${CONTRACTION}`,
    String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*${CONTRACTION}`,
    String.raw`\p{N}{1,3}`,
    String.raw` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
    String.raw`\s*[\r\n]+`,
    String.raw`\s+(?!\S)`,
    String.raw`\s+`,
  ].join('|'),
  'gu',
);
const LETTER = /\p{L}/u;
const PUNCTUATION = /[^\s\p{L}\p{N}]/u;

/** Characters of a word per token, and of a run of punctuation (fitted against o200k). */
const WORD_CHARS = 8;
const PUNCTUATION_CHARS = 4;

/** The estimated o200k tokens of `text`. */
export function estimateTokens(text: string): number {
  let tokens = 0;
  for (const [piece] of text.matchAll(PIECES)) {
    if (LETTER.test(piece)) tokens += Math.max(1, Math.ceil((piece.length - 1) / WORD_CHARS));
    else if (PUNCTUATION.test(piece)) tokens += Math.ceil(piece.trim().length / PUNCTUATION_CHARS) || 1;
    else tokens += 1;
  }
  return tokens;
}
