// The oldest Node.js the bridge runs on. Checked by the executable before anything else is
// loaded: on older Node the bundle fails at import with an error that names no cause.
export const MIN_NODE_MAJOR = 22;

/** The one line to print when `version` (e.g. "v20.20.2") is too old, else undefined. */
export function nodeTooOld(version: string): string | undefined {
  const major = Number(/^v?(\d+)/.exec(version)?.[1] ?? '0');
  if (major >= MIN_NODE_MAJOR) return undefined;
  return `code-execution-mode needs Node.js ${MIN_NODE_MAJOR} or newer; this is Node.js ${version}. Install a current Node.js (https://nodejs.org) and run it again.`;
}
