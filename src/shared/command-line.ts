// A command line split into words, under two rules on purpose:
// - splitCommandLine, for a command a person types when adding a server: the words are the
//   program and its arguments, run without a shell, so `;`, `|` or `$` are ordinary characters.
// - shellWords, for telling whether a server entry would start this bridge through a shell
//   (`sh -c "..."`): there the shell's operators end a word, as the shell would read them.

/** The words of a typed command line: split at blanks, a "double" or 'single' quoted part is one word. */
export function splitCommandLine(line: string): string[] {
  const tokens: string[] = [];
  const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let match = pattern.exec(line); match; match = pattern.exec(line)) tokens.push(match[1] ?? match[2] ?? match[3] ?? '');
  return tokens;
}

/** The words of a shell command line: quotes removed, split at blanks and shell operators. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let started = false;
  let quote: string | undefined;
  for (const c of line) {
    if (quote) {
      if (c === quote) quote = undefined;
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      started = true;
    } else if (/[\s;&|()<>`$]/.test(c)) {
      if (started) words.push(word);
      word = '';
      started = false;
    } else {
      word += c;
      started = true;
    }
  }
  if (started) words.push(word);
  return words;
}
