// The names of files from /work/out as the host shows and stores them. A `file` frame's path
// comes from the sandbox and is hostile: it may hold terminal escapes, line breaks, bidi
// overrides or invisible characters, or be forged (`../../home/user/.bashrc`, `/etc/x`,
// `a\..\..\b`) to look like a path outside /work/out. Every name is shown relative to /work/out:
// empty and `.` segments are dropped, `..` (between slashes or backslashes) is written `%2E%2E`,
// and each character that would not show as itself (controls, format and separator characters)
// and the backslash are written as the percent escapes of their UTF-8 bytes (`%1B`, `%E2%80%AE`,
// `%5C`). The result has no backslash, no `..` part and no leading `/`, so no reader takes it
// for another path; the same name cleaned twice stays the same.

/** Characters written as percent escapes: controls, format (bidi, zero-width), separators, and the backslash. */
const UNSHOWN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\\]/gu;
/** A cleaned name longer than this keeps its head and tail. */
export const MAX_OUT_NAME_CHARS = 300;

function percentEscapes(char: string): string {
  return [...Buffer.from(char, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

function cleanSegment(segment: string): string {
  // `..` between backslashes too: `..\..\x` is a way up for a reader that splits on them.
  const parts = segment.split('\\').map((part) => (part === '..' ? '%2E%2E' : part));
  return parts.join('\\').replace(UNSHOWN, percentEscapes);
}

/**
 * A /work/out file's path (relative to /work/out) as it may be shown, stored and put in a
 * `sandbox:///work/out/...` URI (there each segment is URI-encoded once more).
 */
export function outFilePath(raw: string): string {
  const segments = raw
    .split('/')
    .filter((segment) => segment !== '' && segment !== '.')
    .map(cleanSegment);
  const path = segments.join('/') || '%2E';
  if (path.length <= MAX_OUT_NAME_CHARS) return path;
  const tail = Math.floor((MAX_OUT_NAME_CHARS - 1) / 2);
  return `${path.slice(0, MAX_OUT_NAME_CHARS - 1 - tail)}…${path.slice(-tail)}`;
}
