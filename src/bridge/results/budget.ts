// Fitting a run's output parts (stdout, stderr, value, error) into one character budget: small
// parts are kept whole, big ones share what is left, and each cut keeps its head and its tail.

/**
 * How many characters each part keeps: all of it when everything fits; otherwise the budget is
 * shared out so that parts under an equal share keep everything and the rest split what is left.
 */
export function shareBudget(lengths: readonly number[], budget: number): number[] {
  const total = lengths.reduce((a, b) => a + b, 0);
  if (total <= budget) return [...lengths];
  const kept = lengths.map(() => 0);
  let left = Math.max(0, budget);
  let open = lengths.map((_, i) => i).filter((i) => lengths[i]! > 0);
  while (open.length > 0) {
    const share = Math.floor(left / open.length);
    const small = open.filter((i) => lengths[i]! <= share);
    if (small.length === 0) {
      // The rest are all bigger than a share: each gets one (the remainder to the first ones).
      let extra = left - share * open.length;
      for (const i of open) {
        kept[i] = share + (extra > 0 ? 1 : 0);
        extra--;
      }
      break;
    }
    for (const i of small) {
      kept[i] = lengths[i]!;
      left -= lengths[i]!;
    }
    open = open.filter((i) => !small.includes(i));
  }
  return kept;
}

/** About the length of the line that says a cut, "... [123,456 characters cut] ...". */
const MARKER_CHARS = 40;

export interface Cut {
  text: string;
  /** Characters left out (0 when the text fits). */
  cut: number;
}

/** Where a line starts near `at`, looking at most `slack` characters either way; else `at`. */
function lineStartNear(text: string, at: number, slack: number, direction: 'back' | 'forward'): number {
  if (direction === 'back') {
    const newline = text.lastIndexOf('\n', at - 1);
    return newline >= 0 && at - (newline + 1) <= slack ? newline + 1 : at;
  }
  const newline = text.indexOf('\n', at);
  return newline >= 0 && newline + 1 - at <= slack ? newline + 1 : at;
}

/**
 * Keeps about `keep` characters of `text`: its head and its tail, on line boundaries when one is
 * near, with a line in between that says how much was left out. `earlier` is a cut made before
 * (the capture's own, `marker` is its line in the text): when this cut removes that line, it is
 * counted in.
 */
export function cutMiddle(text: string, keep: number, earlier?: { marker: string; cut: number }): Cut {
  if (text.length <= keep) return { text, cut: 0 };
  // The line that says the cut comes out of the same budget.
  const room = Math.max(0, keep - MARKER_CHARS);
  const headLength = Math.ceil(room / 2);
  const tailLength = room - headLength;
  const slack = Math.floor(room / 10);
  const headEnd = lineStartNear(text, headLength, slack, 'back');
  const tailStart = Math.max(headEnd, lineStartNear(text, text.length - tailLength, slack, 'forward'));
  let cut = tailStart - headEnd;
  if (earlier && earlier.cut > 0) {
    const at = text.indexOf(earlier.marker);
    if (at >= headEnd && at + earlier.marker.length <= tailStart) cut += earlier.cut - earlier.marker.length;
  }
  const head = text.slice(0, headEnd);
  const tail = text.slice(tailStart);
  const line = `... [${cut.toLocaleString('en-US')} characters cut] ...`;
  return { text: `${head}${head === '' || head.endsWith('\n') ? '' : '\n'}${line}\n${tail}`, cut };
}

/** Characters a text takes as a JSON string, without the quotes. */
export function jsonLength(text: string): number {
  return text ? JSON.stringify(text).length - 2 : 0;
}

/**
 * cutMiddle() to at most `budget` characters as JSON (escaped newlines and quotes count twice):
 * a first guess from the text's mix, then smaller while over (each character left out saves one
 * or more).
 */
export function cutToJson(text: string, budget: number, earlier?: { marker: string; cut: number }): Cut {
  const encoded = jsonLength(text);
  if (encoded <= budget) return { text, cut: 0 };
  let keep = Math.floor((budget * text.length) / encoded);
  for (;;) {
    const fitted = cutMiddle(text, keep, earlier);
    const over = jsonLength(fitted.text) - budget;
    if (over <= 0 || keep === 0) return fitted;
    keep = Math.max(0, keep - over);
  }
}
