// How a run's result is shown on a terminal, and the exit status it maps to. What the sandbox
// printed is its own text: on a terminal, control characters (escape sequences that clear the
// screen, set the title or write the clipboard with OSC 52), line and paragraph separators and
// bidi controls are shown as Python writes them in a repr (`\x1b`, `\u202e`), line feeds and tabs
// kept; `--raw` writes them as they are. Pipes and files always get the bytes as they are.
import type { RunResult, RunStatus } from '../sandbox/index.ts';
import { outFilePath } from '../shared/out-names.ts';

/** Where text goes: a stream such as process.stdout, a terminal when `isTTY`. */
export interface TextSink {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** Where a run's output goes, each stream as it may be written there. */
export interface RunOutput {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stdout is escaped (a terminal, without --raw): --json escapes within its strings then. */
  escapesStdout: boolean;
}

/** What a terminal would act on rather than show: controls but the line feed and tab, separators, bidi controls. */
const ACTED_ON = /\r(?!\n)|[\0-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function pythonEscape(char: string): string {
  const code = char.charCodeAt(0);
  if (char === '\r') return '\\r';
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Sandbox text made safe for a terminal: what it would act on is shown escaped; \n, \t and \r\n are kept. */
export function terminalText(text: string): string {
  return text.replace(ACTED_ON, pythonEscape);
}

/** JSON for a terminal: the characters JSON leaves raw in strings (C1 controls, separators, bidi) as \u escapes; still valid JSON. */
export function terminalJson(json: string): string {
  return json.replace(
    /[\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Writers for a run's output: escaped for each stream that is a terminal, unless `raw`. */
export function runOutput(streams: { stdout: TextSink; stderr: TextSink }, raw: boolean): RunOutput {
  const writer = (sink: TextSink) =>
    raw || !sink.isTTY ? (text: string) => void sink.write(text) : (text: string) => void sink.write(terminalText(text));
  return { stdout: writer(streams.stdout), stderr: writer(streams.stderr), escapesStdout: !raw && streams.stdout.isTTY === true };
}

/** The whole result as --json prints it: /work/out names cleaned (a script may write files by them), escaped for a terminal. */
export function resultJson(result: RunResult, out: Pick<RunOutput, 'escapesStdout'>): string {
  const shown = result.files ? { ...result, files: result.files.map((file) => ({ ...file, path: outFilePath(file.path) })) } : result;
  const json = JSON.stringify(shown, null, 2);
  return out.escapesStdout ? terminalJson(json) : json;
}

export function runToExitCode(status: RunStatus): number {
  switch (status) {
    case 'ok':
      return 0;
    case 'error':
      return 1;
    case 'timeout':
      return 124;
    case 'cancelled':
      return 130;
  }
}

/** Writes what was not streamed live: the rest of the output, the value, the error. */
export function writeRunResult(
  result: RunResult,
  printed: { stdout: number; stderr: number },
  out: RunOutput = runOutput(process, false),
): void {
  out.stdout(result.stdout.slice(printed.stdout));
  out.stderr(result.stderr.slice(printed.stderr));
  if (result.value !== null) out.stdout(`${result.value}\n`);
  if (result.images.length > 0) out.stderr(`[${result.images.length} image(s) emitted; use --json to get them]\n`);
  if (result.error) {
    out.stderr(result.error.traceback || `${result.error.type}: ${result.error.message}\n`);
    if (
      result.error.traceback &&
      (result.status === 'timeout' || result.status === 'cancelled' || !result.error.traceback.includes(result.error.message))
    ) {
      out.stderr(`${result.error.type}: ${result.error.message}\n`);
    }
  }
}
