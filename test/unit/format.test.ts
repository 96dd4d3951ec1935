// What the model reads after a run: the view (structuredContent) and the text made from it,
// the budget, base64 placeholders, images once, session changes, progress messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyBase64, KnownImages, replaceBase64, sniffImage } from '../../src/bridge/results/base64-text.ts';
import { sizeText } from '../../src/shared/byte-size.ts';
import { cutMiddle, shareBudget } from '../../src/bridge/results/budget.ts';
import { FILES_KEPT, readRun, renderText, runViewSchema, shapeResult, shapeRun, splitError } from '../../src/bridge/results/format.ts';
import { plural } from '../../src/shared/plural.ts';
import { LastLine, progressMessage } from '../../src/bridge/tool/progress.ts';
import type { RunResult } from '../../src/sandbox/sessions/run-result.ts';
import { noisePng } from '../fixtures/png.ts';
import { runResult } from '../helpers/run-result.ts';

function result(overrides: Partial<RunResult> = {}): RunResult {
  return runResult({ durationMs: 12.345, ...overrides });
}

const png = (kb: number, seed = 1) => noisePng(kb, seed).toString('base64');

test('a small run: only what says something, the same in both forms', () => {
  const shaped = shapeRun({ result: result({ stdout: 'hello\n', value: '42' }), toolCalls: 0, budget: 20_000 });
  assert.deepEqual(shaped.view, { status: 'ok', stdout: 'hello\n', value: '42', durationMs: 12 });
  assert.equal(shaped.text, 'hello\nOut: 42');
  assert.equal(shapeRun({ result: result(), toolCalls: 0, budget: 20_000 }).text, '(no output)');
  const named = shapeRun({ result: result({ session: 'work', stderr: 'careful\n' }), toolCalls: 1, budget: 20_000 });
  assert.deepEqual(named.view, { status: 'ok', stderr: 'careful\n', toolCalls: 1, session: 'work', durationMs: 12 });
  assert.equal(named.text, '[stderr]\ncareful\n[1 tool call]');
  assert.equal(runViewSchema.safeParse(named.view).success, true);
});

test('an error keeps its message once: the traceback without the line that repeats it', () => {
  const error = {
    type: 'ValueError',
    message: 'bad thing',
    traceback: 'Traceback (most recent call last):\n  File "<run-1>", line 2, in f\nValueError: bad thing\n',
  };
  const shaped = shapeRun({ result: result({ status: 'error', error }), toolCalls: 2, budget: 20_000 });
  assert.deepEqual(shaped.view.error, {
    type: 'ValueError',
    message: 'bad thing',
    traceback: 'Traceback (most recent call last):\n  File "<run-1>", line 2, in f',
  });
  assert.equal(shaped.text, 'Traceback (most recent call last):\n  File "<run-1>", line 2, in f\nValueError: bad thing\n[2 tool calls]');
  assert.equal(shaped.text.split('bad thing').length, 2);
  // No frames: the headline alone. A traceback that does not end with the message keeps its own headline.
  assert.deepEqual(splitError({ type: 'Timeout', message: 'too slow', traceback: '' }), {
    type: 'Timeout',
    message: 'too slow',
    frames: '',
    ownHeadline: false,
  });
  const syntax = {
    type: 'SyntaxError',
    message: 'invalid syntax (<run-1>, line 1)',
    traceback: '  File "<run-1>", line 1\n    def (:\n        ^\nSyntaxError: invalid syntax\n',
  };
  assert.equal(splitError(syntax).frames, syntax.traceback.trimEnd());
  const keyboard = splitError({
    type: 'KeyboardInterrupt',
    message: '',
    traceback: 'Traceback (most recent call last):\n  File "<run-1>", line 1\nKeyboardInterrupt\n',
  });
  assert.equal(keyboard.frames, 'Traceback (most recent call last):\n  File "<run-1>", line 1');
  assert.equal(renderText({ status: 'timeout', error: { type: 'Timeout', message: 'too slow' } }), 'Timeout: too slow');
  assert.equal(renderText({ status: 'cancelled' }), '(no output)\n[cancelled]');
});

test('the budget: stdout, stderr, value and error share it; small parts stay whole; head and tail kept', () => {
  assert.deepEqual(shareBudget([10, 20], 100), [10, 20]);
  assert.deepEqual(shareBudget([10, 1000, 1000], 110), [10, 50, 50]);
  assert.deepEqual(shareBudget([0, 5000, 30], 1000), [0, 970, 30]);
  assert.equal(
    shareBudget([300, 300, 300], 100).reduce((a, b) => a + b),
    100,
  );

  const flood = Array.from({ length: 100_000 }, (_, i) => `${i}\n`).join('');
  const error = {
    type: 'RuntimeError',
    message: 'at the end',
    traceback: 'Traceback (most recent call last):\n  File "<run-1>", line 3\nRuntimeError: at the end\n',
  };
  const shaped = shapeRun({ result: result({ status: 'error', stdout: flood, error }), toolCalls: 0, budget: 20_000 });
  const out = shaped.view.stdout!;
  assert.ok(out.length <= 20_000, `stdout kept ${out.length}`);
  assert.ok(out.startsWith('0\n1\n2\n'));
  assert.ok(out.endsWith('99998\n99999\n'));
  assert.match(out, /\n\.\.\. \[[\d,]+ characters cut\] \.\.\.\n/);
  // Cut on line boundaries: every kept line is a whole number.
  assert.ok(out.split('\n').every((line) => line === '' || /^\d+$/.test(line) || /characters cut/.test(line)));
  assert.equal(shaped.view.error?.message, 'at the end', 'the small error is kept whole');
  assert.equal(shaped.view.truncated, true);
  assert.match(
    shaped.view.notes![0]!,
    /^output cut to 1\d,\d\d\d of about 588,959 characters, head and tail kept: print less, or summarise in code/,
  );
  assert.ok(shaped.text.length < 20_600, `text ${shaped.text.length}`);
  assert.ok(JSON.stringify(out).length <= 20_000, `stdout as JSON ${JSON.stringify(out).length}`);
  assert.ok(JSON.stringify(shaped.view).length < 21_000, `structured ${JSON.stringify(shaped.view).length}`);
  assert.match(shaped.text, /\[output cut to/);
});

test("a cut counts the capture's own cut (sandbox.maxOutputChars)", () => {
  const marker = '\n... [1000000 characters omitted] ...\n';
  const captured = `${'a'.repeat(50_000)}${marker}${'b'.repeat(50_000)}`;
  const cut = cutMiddle(captured, 1000, { marker, cut: 1_000_000 });
  assert.equal(cut.cut, 100_000 - 960 + 1_000_000);
  assert.match(cut.text, /^a{480}\n\.\.\. \[1,099,040 characters cut\] \.\.\.\nb{480}$/);
  const shaped = shapeRun({
    result: result({ stdout: captured, omitted: { stdout: 1_000_000, stderr: 0, images: 0 }, truncated: true }),
    toolCalls: 0,
    budget: 1000,
  });
  assert.match(shaped.view.notes![0]!, /of about 1,100,0\d\d characters/);
  assert.equal(cutMiddle('short', 10).text, 'short');
});

test('base64 never reaches the model as text: images by name, other data by size', () => {
  const image = png(12);
  assert.equal(sniffImage(image), 'image/png');
  const known = new KnownImages([{ mime: 'image/png', data: image }]);
  assert.equal(classifyBase64(image.slice(0, 5000), known)?.kind, 'image', 'a known image cut short is still known');
  assert.equal(classifyBase64('v'.repeat(5000), known), undefined, 'a long run of one letter is not base64');
  assert.equal(classifyBase64('0123456789abcdef'.repeat(40), known), undefined, 'nor is hex');
  const random = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 251)).toString('base64');
  assert.deepEqual(classifyBase64(random, known), { kind: 'data', bytes: 3000 });
  const text = `before ${random} after`;
  assert.equal(
    replaceBase64(text, known, (f) => `<${f.kind}>`),
    'before <data> after',
  );
  const wrapped = random.match(/.{1,76}/g)!.join('\n');
  assert.doesNotMatch(
    replaceBase64(wrapped, known, () => '<x>'),
    /[A-Za-z0-9+/]{77}/,
    'MIME-wrapped lines are one run',
  );
  assert.equal(sizeText(512), '512 bytes');
  assert.equal(sizeText(12 * 1024), '12 KiB');
  assert.equal(sizeText(5.6 * 1024 * 1024), '5.6 MiB');
});

test("images on purpose: a tool's image is attached when returned, once; printed, it is only named", () => {
  const image = png(12);
  const repr = `[{'type': 'image', 'mimeType': 'image/png', 'data': '${image}'}, 'a picture']`;
  const returned = shapeRun({
    result: result({ value: repr }),
    toolCalls: 1,
    toolImages: [{ mime: 'image/png', data: image }],
    budget: 20_000,
  });
  assert.equal(
    returned.view.value,
    "[{'type': 'image', 'mimeType': 'image/png', 'data': '<image image/png 12 KiB, attached>'}, 'a picture']",
  );
  assert.equal(returned.images.length, 1);
  assert.equal(returned.view.images, 1);
  assert.match(returned.text, /\[1 image attached; 1 tool call\]/);
  assert.doesNotMatch(returned.text + JSON.stringify(returned.view), /iVBOR/);

  const called = shapeRun({
    result: result({ value: "['dict', 'str']" }),
    toolCalls: 1,
    toolImages: [{ mime: 'image/png', data: image }],
    budget: 20_000,
  });
  assert.equal(called.images.length, 0, 'a tool image is not attached by itself');

  const printed = shapeRun({
    result: result({ stdout: `${repr}\n` }),
    toolCalls: 1,
    toolImages: [{ mime: 'image/png', data: image }],
    budget: 20_000,
  });
  assert.equal(printed.images.length, 0);
  assert.match(printed.view.stdout!, /<image image\/png 12 KiB, not attached: return it as the last value to show it>/);

  // Emitted and returned: the same bytes once; five copies in a value: once.
  const both = shapeRun({
    result: result({ images: [{ mime: 'image/png', data: image }], value: `[${Array(5).fill(`'${image}'`).join(', ')}]` }),
    toolCalls: 5,
    toolImages: [{ mime: 'image/png', data: image }],
    budget: 20_000,
  });
  assert.equal(both.images.length, 1);
  assert.equal(both.recorded.length, 1);
  assert.equal(both.view.value, `[${Array(5).fill("'<image image/png 12 KiB, attached>'").join(', ')}]`);
});

test('an image made in the sandbox and returned as base64 is attached; other base64 is only sized', () => {
  const image = png(3, 7);
  const shaped = shapeRun({ result: result({ value: `'${image}'` }), toolCalls: 0, budget: 20_000 });
  assert.equal(shaped.images.length, 1);
  assert.equal(shaped.view.value, "'<image image/png 3172 bytes, attached>'");
});

test('images over the per-result budget are left out with a note', () => {
  const images = [png(30, 1), png(30, 2), png(30, 3)].map((data) => ({ mime: 'image/png', data }));
  const input = { result: result({ images }), toolCalls: 0, budget: 20_000, imageBudget: 70 * 1024 };
  const shaped = shapeRun(input);
  assert.equal(shaped.images.length, 2);
  assert.equal(shaped.recorded.length, 3, 'the run log still gets all three');
  assert.match(shaped.view.notes!.join(' '), /1 image not attached: over the 70 KiB image budget of a result/);
  assert.equal(shaped.view.truncated, true);
  const capped = shapeRun({ ...input, maxBytes: 1000 });
  assert.equal(capped.images.length, 0);
  assert.match(capped.text, /3 images not attached/);
  assert.equal(capped.reply.content.length, 1);
});

test('a session change is said first, in both forms, with its reason', () => {
  const change = { kind: 'reaped' as const, reason: 'closed after 10 min idle (sandbox.idleSeconds)' };
  const shaped = shapeRun({ result: result({ value: '1', sessionChange: change }), toolCalls: 0, budget: 20_000 });
  assert.deepEqual(shaped.view.sessionChange, change);
  assert.equal(shaped.view.session, 'default');
  assert.equal(
    shaped.text.split('\n')[0],
    '[session "default" was reaped: closed after 10 min idle (sandbox.idleSeconds). This run started with a fresh interpreter; earlier variables and imports are gone.]',
  );
  assert.equal(runViewSchema.safeParse(shaped.view).success, true);
});

test('the audit note is said in both forms', () => {
  const shaped = shapeRun({
    result: result({ value: '1' }),
    toolCalls: 0,
    budget: 20_000,
    audit: 'the audit log is not being written (x): this run is not recorded',
  });
  assert.equal(shaped.view.auditLog, 'the audit log is not being written (x): this run is not recorded');
  assert.match(shaped.text, /\n\[the audit log is not being written \(x\): this run is not recorded\]$/);
});

test('progress: the last complete line, and counts in words', () => {
  const tracker = new LastLine();
  // Read through a function: assert.equal narrows a property to the literal it was compared with.
  const last = {
    add: (stream: 'stdout' | 'stderr', text: string) => tracker.add(stream, text),
    get line(): string {
      return tracker.line;
    },
  };
  last.add('stdout', '1\n2\n3');
  assert.equal(last.line, '2');
  last.add('stdout', '4\n');
  assert.equal(last.line, '34');
  last.add('stdout', '\n\n   \n');
  assert.equal(last.line, '34', 'blank lines are skipped');
  last.add('stderr', 'warn');
  assert.equal(last.line, '34', 'an unfinished line waits');
  last.add('stderr', 'ing: x\n');
  assert.equal(last.line, 'warning: x');
  last.add('stdout', `${'y'.repeat(500)}\n`);
  assert.equal(tracker.line.length, 120);
  assert.equal(progressMessage(4, 1, '41'), 'running for 4 s, 1 tool call: 41');
  assert.equal(progressMessage(2, 0, ''), 'running for 2 s');
  assert.equal(progressMessage(6, 3, 'x'), 'running for 6 s, 3 tool calls: x');
  assert.equal(plural(1, 'image'), '1 image');
});

test('images the capture did not keep are said', () => {
  const shaped = shapeRun({
    result: result({ omitted: { stdout: 0, stderr: 0, images: 3 }, truncated: true }),
    toolCalls: 0,
    budget: 20_000,
  });
  assert.deepEqual(shaped.view.notes, ['3 images not kept: at most 16 per run, 8.0 MiB each']);
  assert.equal(shaped.text, '(no output)\n[3 images not kept: at most 16 per run, 8.0 MiB each]');
});

test('configured times in reasons read as a person says them', async () => {
  const { spokenSeconds } = await import('../../src/sandbox/sessions/manager.ts');
  assert.deepEqual([600, 45, 7200, 90, 0.5].map(spokenSeconds), ['10 min', '45 s', '2 h', '90 s', '0.5 s']);
});

test('files from /work/out: small UTF-8 text inline, binary or bigger attached within the budget, the rest named with why', () => {
  const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64');
  const big = Buffer.alloc(3000, 1);
  const input = {
    result: result({
      files: [
        { path: 'notes.md', bytes: 6, data: b64('# hi\n\n') },
        { path: 'raw.bin', bytes: 4, data: b64(Buffer.from([0xff, 0xfe, 0, 1])) },
        { path: 'large.txt', bytes: 9000, data: b64('x'.repeat(9000)) },
        { path: 'over.bin', bytes: big.length, data: b64(big) },
        { path: 'huge.csv', bytes: 5 * 1024 * 1024, skipped: 'size' },
        { path: 'f21.txt', bytes: 2, skipped: 'count' },
      ],
    }),
    toolCalls: 0,
    budget: 20_000,
    imageBudget: 10_000,
  };
  const reading = readRun(input);
  const shaped = shapeResult(reading);
  const files = shaped.view.files!;
  assert.equal(files[0]!.text, '# hi\n\n');
  assert.equal(files[1]!.attached, true, 'not UTF-8: attached');
  assert.equal(files[2]!.attached, true, 'over 8 KB: attached');
  assert.match(files[3]!.note ?? '', /over the .* attachment budget/);
  assert.match(files[4]!.note ?? '', /not returned: over 4/);
  assert.match(files[5]!.note ?? '', /more than 20 files/);
  assert.deepEqual(
    shaped.files.map((f) => [f.path, f.mime]),
    [
      ['raw.bin', 'application/octet-stream'],
      ['large.txt', 'text/plain'],
    ],
  );
  assert.equal(shaped.view.truncated, true);
  assert.ok(runViewSchema.safeParse(shaped.view).success);
  assert.match(shaped.text, /\[file \/work\/out\/notes\.md, 6 bytes\]\n# hi\n\n\[end of \/work\/out\/notes\.md\]/);
  assert.match(shaped.text, /\[file \/work\/out\/raw\.bin, 4 bytes: attached\]/);
  // Where the user finds them: said once, in the notes (not when the run log is not written).
  assert.deepEqual(shaped.view.notes, [FILES_KEPT]);
  assert.equal(shapeResult(reading, { audit: 'the audit log is not being written' }).view.notes, undefined);
  const inline = shapeRun({ result: result({ files: [{ path: 'a.txt', bytes: 2, data: b64('hi') }] }), toolCalls: 0, budget: 20_000 });
  assert.equal(inline.view.notes, undefined, 'a file shown inline needs no finding');
  const capped = shapeResult(reading, { maxBytes: 1000 });
  assert.equal(capped.files.length, 0);
  assert.match(capped.view.files![1]!.note ?? '', /too big/);
  assert.equal(shaped.view.files![1]!.attached, true, 'one reading makes both results: the capped one changes nothing of it');
  assert.equal(shapeRun({ result: result(), toolCalls: 0, budget: 20_000 }).view.files, undefined, 'no files: nothing said');
});

test('an SVG (active content: onload, scripts) never comes back as an image: emitted, returned from a tool, or as a file', () => {
  const svg = Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.domain)"><script>fetch("//evil.example")</script></svg>'.repeat(4),
  ).toString('base64');
  const emitted = shapeRun({
    result: result({
      images: [
        { mime: 'image/svg+xml', data: svg },
        { mime: 'image/png', data: png(3, 1) },
      ],
    }),
    toolCalls: 0,
    budget: 20_000,
  });
  assert.deepEqual(
    emitted.images.map((i) => i.mime),
    ['image/png'],
    'only the raster image is attached',
  );
  assert.match(
    emitted.text,
    /1 image not attached: only PNG, JPEG, GIF and WebP images are returned \(SVG and other image types can carry scripts\); render it to PNG/,
  );
  assert.equal(emitted.view.images, 1);
  assert.equal(emitted.view.truncated, true);

  // A proxied tool's SVG image, returned as the last value: named with why, not attached, no base64.
  const repr = `{'type': 'image', 'mimeType': 'image/svg+xml', 'data': '${svg}'}`;
  const returned = shapeRun({
    result: result({ value: repr }),
    toolCalls: 1,
    toolImages: [{ mime: 'image/svg+xml', data: svg }],
    budget: 20_000,
  });
  assert.equal(returned.images.length, 0);
  assert.match(returned.view.value!, /<image image\/svg\+xml \d+ bytes, not attached: only PNG, JPEG, GIF and WebP/);
  assert.doesNotMatch(returned.text, new RegExp(svg.slice(0, 40).replace(/[+/]/g, '\\$&')));
  const printed = shapeRun({
    result: result({ stdout: `${repr}\n` }),
    toolCalls: 1,
    toolImages: [{ mime: 'image/svg+xml', data: svg }],
    budget: 20_000,
  });
  assert.match(printed.view.stdout!, /not attached: only PNG, JPEG, GIF and WebP/, 'not told to return it: it would not be shown either');

  // Any other non-raster image type the same way.
  assert.equal(
    shapeRun({ result: result({ images: [{ mime: 'image/x-icon', data: svg }] }), toolCalls: 0, budget: 20_000 }).images.length,
    0,
  );

  // From /work/out: its text (inline when small), or attached as text, never labelled image/svg+xml.
  const big = Buffer.from(`<svg onload="x()">${' '.repeat(9000)}</svg>`);
  const files = shapeRun({
    result: result({ files: [{ path: 'plot.svg', bytes: big.length, data: big.toString('base64') }] }),
    toolCalls: 0,
    budget: 20_000,
  });
  assert.deepEqual(
    files.files.map((f) => f.mime),
    ['text/plain'],
  );
});
