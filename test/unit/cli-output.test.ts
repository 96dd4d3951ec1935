// The CLI on a terminal: what the sandbox printed is shown with its control characters escaped
// (no OSC 52 clipboard write, screen clear or title change reaches the terminal), line feeds and
// tabs kept; --raw and pipes get the text as it is.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resultJson, runOutput, terminalJson, terminalText, writeRunResult, type TextSink } from '../../src/cli/output.ts';
import type { RunResult } from '../../src/sandbox/sessions/run-result.ts';
import { runResult } from '../helpers/run-result.ts';

const CLIPBOARD = '\x1b]52;c;ZWNobyBwd25lZA==\x07';
const CLEAR = '\x1b[2J\x1b[H';
const TITLE = '\x1b]0;pwned\x07';

test('escape sequences, lone carriage returns, C1 controls, separators and bidi controls are shown escaped', () => {
  assert.equal(terminalText(`a${CLIPBOARD}b`), 'a\\x1b]52;c;ZWNobyBwd25lZA==\\x07b');
  assert.equal(terminalText(CLEAR + TITLE), '\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07');
  assert.equal(terminalText('progress 10%\rprogress 99%\r\n'), 'progress 10%\\rprogress 99%\r\n');
  assert.equal(terminalText('\x9b31m \x00 \x7f \x08'), '\\x9b31m \\x00 \\x7f \\x08');
  assert.equal(terminalText('report\u202etxt.exe \u2066x\u2069 a\u2028b'), 'report\\u202etxt.exe \\u2066x\\u2069 a\\u2028b');
  // What a terminal shows as itself is left alone.
  const plain = 'line 1\n\tcol\u00e9 \u65e5\u672c 👩‍👩‍👧 ✓\n';
  assert.equal(terminalText(plain), plain);
  assert.doesNotMatch(terminalText(`${CLIPBOARD}${CLEAR}${TITLE}\u202e\x9b`), /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/);
});

function sink(isTTY: boolean): TextSink & { text: string } {
  const s = { text: '', isTTY, write: (t: string) => (s.text += t) };
  return s;
}

test('the escaping is applied to each stream that is a terminal, and --raw turns it off', () => {
  const tty = { stdout: sink(true), stderr: sink(true) };
  const out = runOutput(tty, false);
  out.stdout(CLIPBOARD);
  out.stderr(TITLE);
  assert.equal(tty.stdout.text, '\\x1b]52;c;ZWNobyBwd25lZA==\\x07');
  assert.equal(tty.stderr.text, '\\x1b]0;pwned\\x07');
  assert.equal(out.escapesStdout, true);
  const raw = { stdout: sink(true), stderr: sink(true) };
  runOutput(raw, true).stdout(CLIPBOARD);
  assert.equal(raw.stdout.text, CLIPBOARD, '--raw');
  const piped = { stdout: sink(false), stderr: sink(true) };
  const mixed = runOutput(piped, false);
  mixed.stdout(CLIPBOARD);
  mixed.stderr(CLIPBOARD);
  assert.equal(piped.stdout.text, CLIPBOARD, 'a pipe gets the bytes');
  assert.equal(piped.stderr.text, '\\x1b]52;c;ZWNobyBwd25lZA==\\x07', 'the terminal on stderr is still protected');
  assert.equal(mixed.escapesStdout, false);
});

const run = (overrides: Partial<RunResult>): RunResult => runResult({ status: 'error', ...overrides });

test('the result written after a run (rest of the output, value, error) goes through the same escaping', () => {
  const tty = { stdout: sink(true), stderr: sink(true) };
  const result = run({
    stdout: `head${CLEAR}tail\n`,
    stderr: `${TITLE}\n`,
    value: `'${CLIPBOARD}'`,
    error: { type: 'ValueError', message: `bad ${TITLE}`, traceback: `Traceback:\n  x\nValueError: bad ${TITLE}\n` },
  });
  writeRunResult(result, { stdout: 4, stderr: 0 }, runOutput(tty, false));
  assert.equal(tty.stdout.text, "\\x1b[2J\\x1b[Htail\n'\\x1b]52;c;ZWNobyBwd25lZA==\\x07'\n");
  assert.equal(tty.stderr.text, '\\x1b]0;pwned\\x07\nTraceback:\n  x\nValueError: bad \\x1b]0;pwned\\x07\n');
});

test('--json on a terminal escapes what JSON leaves raw, stays valid JSON, and cleans /work/out names', () => {
  const result = run({ stdout: `${CLIPBOARD}\u202e\x9b`, files: [{ path: '../../home/user/.bashrc', bytes: 1 }] });
  const shown = resultJson(result, { escapesStdout: true });
  assert.doesNotMatch(shown, /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/);
  const parsed = JSON.parse(shown) as RunResult;
  assert.equal(parsed.stdout, result.stdout, 'the same text once parsed');
  assert.equal(parsed.files?.[0]?.path, '%2E%2E/%2E%2E/home/user/.bashrc');
  assert.equal(terminalJson('"\u2028"'), '"\\u2028"');
  // To a pipe, the JSON is as JSON.stringify writes it (names cleaned all the same).
  assert.match(resultJson(result, { escapesStdout: false }), /\u202e/);
});
