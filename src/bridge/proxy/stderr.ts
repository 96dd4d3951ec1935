// What a proxied server wrote on stderr, made fit for an error message: its last few lines,
// short, with secrets replaced. The message reaches the model, the log and the Tools view.
import { redactUrlSecrets } from '../../config/url-secrets.ts';

const STDERR_LINES = 5;
const STDERR_CHARS = 600;
/** Env and header values longer than this may be tokens written straight into an entry. */
const REDACT_OVER = 7;
const REDACTED = '***';

/**
 * Replaces every stored secret value, and every other given value longer than REDACT_OVER
 * characters, with `***` (longest first, so that a value inside another goes too); then the
 * credentials of any URL in the text (config/url-secrets.ts), such as a server URL's user:password.
 */
export function redactor(secrets: readonly string[], values: readonly string[]): (text: string) => string {
  const hidden = [...new Set([...secrets.filter((s) => s.length > 0), ...values.filter((v) => v.length > REDACT_OVER)])].sort(
    (a, b) => b.length - a.length,
  );
  return (text) => redactUrlSecrets(hidden.reduce((out, value) => out.split(value).join(REDACTED), text));
}

/** The last non-empty lines (up to STDERR_LINES and STDERR_CHARS), joined by " | ". */
export function stderrSummary(tail: string, redact: (text: string) => string = (t) => t): string {
  // Redact before cutting, so that a cut never leaves part of a secret behind.
  const lines = redact(tail)
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean)
    .slice(-STDERR_LINES);
  let text = lines.join(' | ');
  if (text.length > STDERR_CHARS) text = `...${text.slice(-(STDERR_CHARS - 3))}`;
  return text;
}
