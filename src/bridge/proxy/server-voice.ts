// How a proxied server's failures are told, twice: in full to people (the log, the Tools view:
// redacted, clipped, with the tail of what it wrote on stderr), and in our words only to
// sandboxed code (failures.ts, server-errors.ts). Redaction hides the server's stored secrets,
// the long values of its own entry once substituted, and the OAuth tokens of the moment.
import { clip } from '../../shared/clip.ts';
import type { VariableError } from '../../config/variables.ts';
import { exitText, startReason, type ExitInfo } from './failures.ts';
import type { LinkState } from './link.ts';
import type { ServerOAuth } from './oauth/server-oauth.ts';
import { explain, seeLog, ServerUnavailableError } from './server-errors.ts';
import { redactor, stderrSummary } from './stderr.ts';

const SET_SECRET_COMMAND = 'Code Execution Mode: Set Server Secret';
const STDERR_TAIL = 4000;
/** The longest a detail (for the log and the Tools view) gets. */
const MAX_DETAIL_CHARS = 2000;

export interface VoiceOptions {
  /** Every stored secret value of this server (env, headers, inputs). */
  secretValues: readonly string[];
  oauth: ServerOAuth | undefined;
  connectMs: number;
  maxResultBytes: number;
}

export class ServerVoice {
  private readonly name: string;
  private readonly options: VoiceOptions;
  private redactText: (text: string) => string;
  private stderrTail = '';

  constructor(name: string, options: VoiceOptions) {
    this.name = name;
    this.options = options;
    this.redactText = this.withTokens(redactor(options.secretValues, []));
  }

  /** Also hides the OAuth tokens of the moment (they change with each refresh): an error echoing its Authorization header tells none. */
  private withTokens(redact: (text: string) => string): (text: string) => string {
    const oauth = this.options.oauth;
    if (!oauth) return redact;
    return (text) => redactor(oauth.provider.tokenValues(), [])(redact(text));
  }

  /** The entry's own env or header values, once substituted: long ones may be tokens written straight into it. */
  entryValues(values: readonly string[]): void {
    this.redactText = this.withTokens(redactor(this.options.secretValues, values));
  }

  redact(text: string): string {
    return this.redactText(text);
  }

  /** A new stdio process starts: what the last one wrote is forgotten. */
  stdioStarted(): void {
    this.stderrTail = '';
  }

  /** A chunk of the server's stderr. Only the tail is kept: decode no more of a big chunk than that. */
  stderr(chunk: Buffer): void {
    this.stderrTail = (this.stderrTail + chunk.subarray(-STDERR_TAIL).toString('utf8')).slice(-STDERR_TAIL);
  }

  /** A line for people: redacted and clipped. */
  detail(text: string): string {
    const redacted = this.redact(text);
    return clip(redacted, MAX_DETAIL_CHARS);
  }

  /** " (its error output is in the ... log)" when the server wrote anything on stderr. */
  seeLog(): string {
    return seeLog(this.wroteStderr());
  }

  /** "; its stderr ended with: a | b", or nothing when it wrote nothing. For people only. */
  stderrNote(): string {
    const summary = stderrSummary(this.stderrTail, (text) => this.redact(text));
    return summary ? `; its stderr ended with: ${summary}` : '';
  }

  /** A `${...}` variable of the entry that cannot be filled. */
  variableMessage(error: VariableError): string {
    if (error.inputId !== undefined) {
      return `server "${this.name}" cannot start: it uses ${error.variable}, and input "${error.inputId}" has no stored value; set it with the "${SET_SECRET_COMMAND}" command`;
    }
    return `server "${this.name}" cannot start: ${error.message}`;
  }

  startError(error: unknown, exit: ExitInfo | undefined, command: string | undefined): ServerUnavailableError {
    const reason = startReason(error, exit, this.options.connectMs, command);
    const timedOut = reason.startsWith('did not finish');
    const cause = timedOut
      ? reason
      : `failed to start: ${error instanceof Error ? error.message : String(error)}${exit ? ` (${exitText(exit)})` : ''}`;
    // The command is the user's, not the server's; still, it may hold a substituted secret.
    return new ServerUnavailableError(
      this.redact(`server "${this.name}" ${reason}${this.seeLog()}`),
      this.detail(`server "${this.name}" ${cause}${this.stderrNote()}`),
    );
  }

  /** `error`, from `doing` over a link in `state`, as sandboxed code is told it (server-errors.ts). */
  explain(error: unknown, doing: string, state: LinkState): Error {
    return explain(error, doing, {
      name: this.name,
      oauth: this.options.oauth,
      oversize: state.oversize,
      closedReason: state.reason,
      maxResultBytes: this.options.maxResultBytes,
      redact: (text) => this.redact(text),
      wroteStderr: this.wroteStderr(),
    });
  }

  private wroteStderr(): boolean {
    return this.stderrTail.trim() !== '';
  }
}
