// The image's distributions as a `ready` frame reports them: the frame's caps, then the
// host's check (names, tooling left out, duplicates), the one summary every place tells (notable
// names first, then a count), what sandboxed code is told, and
// the state file that remembers them between bridges.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  IMAGE_PACKAGES_FILE,
  MAX_IMAGE_PACKAGES_FILE_BYTES,
  MAX_REMEMBERED_IMAGES,
  rememberedImagePackages,
  rememberedUnderName,
  rememberImagePackages,
} from '../../src/state/image-packages-file.ts';
import { imagePackagesText, installedSentence, WASM_INSTALLED } from '../../src/bridge/tool/packages-status.ts';
import { RUN_PYTHON_DESCRIPTION, runPythonDescription } from '../../src/bridge/tool/run-python.ts';
import { parseConfig } from '../../src/config/load.ts';
import {
  distributionsText,
  imageDistributions,
  imageKey,
  LearnedImages,
  MAX_LEARNED_IMAGES,
  MAX_DISTRIBUTION_NAME_CHARS,
  MAX_DISTRIBUTIONS,
  MAX_DISTRIBUTIONS_TEXT_CHARS,
  MAX_NAMED_DISTRIBUTIONS,
  orderedDistributions,
} from '../../src/sandbox/image/distributions.ts';
import { kernelMessageSchema } from '../../src/sandbox/protocol/messages.ts';
import type { RequestContext } from '../../src/sandbox/sessions/run-requests.ts';
import { createHostMethods } from '../../src/bridge/sandbox-api/host-methods.ts';
import type { ProxyHub } from '../../src/bridge/proxy/hub.ts';

const ready = (extra: Record<string, unknown>) => ({ t: 'ready', python: '3.11.2', pid: 7, seccomp: 'installed', ...extra });

test('a ready frame carries at most the capped count of names, each at most the capped length', () => {
  assert.ok(kernelMessageSchema.safeParse(ready({})).success, 'the field is optional (an older kernel)');
  const most = Array.from({ length: MAX_DISTRIBUTIONS }, (_, i) => `p${i}`);
  assert.ok(kernelMessageSchema.safeParse(ready({ dists: most, distsMore: 3 })).success);
  assert.ok(!kernelMessageSchema.safeParse(ready({ dists: [...most, 'one-more'] })).success, 'one name over the count');
  assert.ok(kernelMessageSchema.safeParse(ready({ dists: ['a'.repeat(MAX_DISTRIBUTION_NAME_CHARS)] })).success);
  assert.ok(
    !kernelMessageSchema.safeParse(ready({ dists: ['a'.repeat(MAX_DISTRIBUTION_NAME_CHARS + 1)] })).success,
    'one character over the length',
  );
  assert.ok(!kernelMessageSchema.safeParse(ready({ dists: [''] })).success, 'an empty name');
  assert.ok(!kernelMessageSchema.safeParse(ready({ dists: [3] })).success, 'a name that is not a string');
  assert.ok(!kernelMessageSchema.safeParse(ready({ dists: [], distsMore: -1 })).success, 'a negative count');
  assert.ok(!kernelMessageSchema.safeParse(ready({ dists: [], distsMore: 1.5 })).success);
});

test('tooling is left out, names are checked, one per project, sorted', () => {
  const found = imageDistributions(
    [
      'pip',
      'setuptools',
      'Wheel',
      'numpy',
      'Pillow',
      'python_dateutil',
      'python-dateutil',
      'zope.interface',
      'bad name',
      'x;rm',
      '-lead',
      'trail.',
      'ufoLib2',
    ],
    2,
  );
  assert.deepEqual(found.names, ['numpy', 'Pillow', 'python_dateutil', 'ufoLib2', 'zope.interface']);
  assert.equal(found.more, 2 + 4, "the kernel's count plus the four malformed names");
  // The official python image has pip alone: standard library only.
  assert.deepEqual(imageDistributions(['pip']).names, []);
  assert.deepEqual(imageDistributions(undefined), { names: [], more: 0 });
});

test('the host holds its own caps even for names that did not come through the frame schema', () => {
  const many = Array.from({ length: MAX_DISTRIBUTIONS + 40 }, (_, i) => `pkg${String(i).padStart(4, '0')}`);
  const found = imageDistributions([...many.slice(0, 10), 'a'.repeat(MAX_DISTRIBUTION_NAME_CHARS + 1), ...many.slice(10)]);
  assert.equal(found.names.length, MAX_DISTRIBUTIONS - 1);
  assert.equal(found.more, 1 + 41);
});

test('the one summary names the notable distributions first, in their order, then the rest alphabetically, and counts what it leaves out', () => {
  const names = Array.from({ length: 400 }, (_, i) => `package-number-${i}`);
  const found = imageDistributions(names, 5);
  const text = distributionsText(found);
  assert.ok(text.length <= MAX_DISTRIBUTIONS_TEXT_CHARS + 40, `${text.length} characters`);
  const shown = text.split(' and ')[0]!.split(', ').length;
  assert.ok(shown <= MAX_NAMED_DISTRIBUTIONS && shown >= 5, `${shown} names: its characters are capped too`);
  assert.match(text, new RegExp(` and ${400 - shown + 5} more$`));
  // The data image: alphabetically, scipy came 24th and a cut at 20 hid it.
  const data = imageDistributions([
    'Brotli',
    'Pillow',
    'appdirs',
    'attrs',
    'contourpy',
    'lxml',
    'matplotlib',
    'numpy',
    'python_dateutil',
    'scipy',
    'six',
    'sympy',
  ]);
  assert.deepEqual(orderedDistributions(data.names).slice(0, 6), ['numpy', 'matplotlib', 'scipy', 'sympy', 'Pillow', 'lxml']);
  assert.equal(distributionsText(data), 'numpy, matplotlib, scipy, sympy, Pillow, lxml, python_dateutil, appdirs and 4 more');
  assert.equal(distributionsText(data, 3), 'numpy, matplotlib, scipy and 9 more');
  assert.equal(orderedDistributions(['Scikit_Learn', 'requests', 'aaa'])[0], 'requests', 'compared by normalized name');
  assert.equal(distributionsText({ names: ['scipy', 'numpy'], more: 0 }), 'numpy, scipy');
  assert.equal(distributionsText({ names: [], more: 3 }), '3 more');
  assert.equal(imagePackagesText(undefined), '', 'nothing known yet');
  assert.equal(imagePackagesText({ names: [], more: 0 }), 'Python packages: Only the Python standard library is installed.');
  assert.equal(
    imagePackagesText({ names: ['scipy', 'matplotlib', 'numpy'], more: 0 }),
    'Python packages: Installed besides the standard library: numpy, matplotlib, scipy.',
  );
  assert.equal(imagePackagesText(undefined, true), `Python packages: ${WASM_INSTALLED}`);
  assert.equal(installedSentence({ names: ['numpy'], more: 0 }, true), WASM_INSTALLED, "WebAssembly's truth is its own");
});

test('an image is known by its packages tag, else its ID, else its name', () => {
  assert.equal(imageKey({ image: 'localhost/cem-packages:abc', imageId: 'sha256:1' }, 'python:3.12-slim'), 'localhost/cem-packages:abc');
  assert.equal(imageKey({ imageId: 'sha256:1' }, 'python:3.12-slim'), 'sha256:1');
  assert.equal(imageKey({}, 'python:3.12-slim'), 'python:3.12-slim');
});

test('the listing with an image of its own packages names them as the summary does', () => {
  const { sandbox } = parseConfig({ servers: {} });
  const described = runPythonDescription(sandbox, imageDistributions(['matplotlib', 'numpy']));
  assert.match(described, /^Python 3 sandbox, with packages numpy, matplotlib \(no pip, no network\)/);
  assert.equal(runPythonDescription(sandbox, imageDistributions(['pip', 'setuptools', 'wheel'])), RUN_PYTHON_DESCRIPTION);
});

test('image-packages.json: remembered per image ID, capped in entries, dropped whole when it does not fit', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-image-packages-'));
  try {
    assert.equal(await rememberedImagePackages(dir, 'sha256:1'), undefined, 'no file yet');
    await rememberImagePackages(dir, 'img', 'sha256:1', { names: ['numpy', 'scipy'], more: 1 });
    assert.deepEqual(await rememberedImagePackages(dir, 'sha256:1'), { names: ['numpy', 'scipy'], more: 1 });
    assert.equal(await rememberedImagePackages(dir, 'img'), undefined, 'by its ID, not its name');
    assert.equal(await rememberedImagePackages(dir, 'sha256:2'), undefined);
    // The same name, pulled anew (another ID): a second entry; the first stays under its own ID.
    await rememberImagePackages(dir, 'img', 'sha256:2', { names: [], more: 0 });
    assert.deepEqual(await rememberedImagePackages(dir, 'sha256:2'), { names: [], more: 0 });
    assert.deepEqual(await rememberedImagePackages(dir, 'sha256:1'), { names: ['numpy', 'scipy'], more: 1 });
    // Under its name, a start's hint before the ID is known: the newest entry that ran as it.
    assert.deepEqual(await rememberedUnderName(dir, 'img'), { names: [], more: 0 });
    assert.equal(await rememberedUnderName(dir, 'other'), undefined);
    const path = join(dir, IMAGE_PACKAGES_FILE);
    if (process.platform !== 'win32') assert.equal((await stat(path)).mode & 0o777, 0o600, 'owner-only');
    // One more image than the cap: the least recently learned goes.
    for (let i = 0; i < MAX_REMEMBERED_IMAGES; i++)
      await rememberImagePackages(dir, `img-${i}`, `sha256:f${i}`, { names: ['six'], more: 0 }, Date.now() + 1000 + i);
    const file = JSON.parse(await readFile(path, 'utf8')) as { images: Record<string, unknown> };
    assert.equal(Object.keys(file.images).length, MAX_REMEMBERED_IMAGES);
    assert.equal(await rememberedImagePackages(dir, 'sha256:1'), undefined);
    // Names written by someone else are checked again (tooling and malformed names left out); a
    // file that filed entries by image name is read by the key each entry records.
    await writeFile(
      path,
      JSON.stringify({ version: 1, images: { img: { key: 'k', names: ['pip', 'ok', 'not ok'], more: 0, learnedAt: 1 } } }),
    );
    assert.deepEqual(await rememberedImagePackages(dir, 'k'), { names: ['ok'], more: 1 });
    assert.deepEqual(await rememberedUnderName(dir, 'img'), { names: ['ok'], more: 1 }, 'an older entry is under the name it is filed by');
    // Over the schema's caps, malformed, or too big: nothing is remembered.
    await writeFile(
      path,
      JSON.stringify({
        version: 1,
        images: { img: { key: 'k', names: Array.from({ length: MAX_DISTRIBUTIONS + 1 }, (_, i) => `p${i}`), more: 0, learnedAt: 1 } },
      }),
    );
    assert.equal(await rememberedImagePackages(dir, 'k'), undefined);
    await writeFile(path, '{"version":1,');
    assert.equal(await rememberedImagePackages(dir, 'k'), undefined);
    await writeFile(
      path,
      JSON.stringify({ version: 1, images: { img: { key: 'k', names: ['numpy'], more: 0, learnedAt: 1 } } }) +
        ' '.repeat(MAX_IMAGE_PACKAGES_FILE_BYTES),
    );
    assert.equal(await rememberedImagePackages(dir, 'k'), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('images are learned once each, the first report kept, at most the capped number of images', () => {
  const learned = new LearnedImages();
  assert.equal(learned.learn('a', { names: ['numpy'], more: 0 }), true);
  assert.equal(learned.learn('a', { names: [], more: 0 }), false, 'a later container of the same image changes nothing');
  assert.deepEqual(learned.get('a'), { names: ['numpy'], more: 0 });
  for (let i = 0; i < MAX_LEARNED_IMAGES; i++) learned.learn(`image-${i}`, { names: [], more: 0 });
  assert.equal(learned.size, MAX_LEARNED_IMAGES);
  assert.equal(learned.get('a'), undefined, 'the oldest image went');
  assert.deepEqual(learned.get(`image-${MAX_LEARNED_IMAGES - 1}`), { names: [], more: 0 });
});

test("sandboxed code asks the bridge for its packages' sentence (sandbox_packages): no tool call, nothing without a source", async () => {
  const context: RequestContext = {
    runId: 'r',
    session: 'default',
    signal: new AbortController().signal,
    emitImage: () => undefined,
    untimed: (work) => work,
    describe: () => undefined,
  };
  const found = { names: ['scipy', 'numpy'], more: 2 };
  const facts = { installed: installedSentence(found), canAdd: true };
  const run = createHostMethods({} as ProxyHub, undefined, undefined, undefined, () => facts).forRun();
  assert.deepEqual(await run.handle('sandbox_packages', {}, context), {
    installed: 'Installed besides the standard library: numpy, scipy and 2 more.',
    canAdd: true,
  });
  assert.equal(run.toolCalls(), 0);
  assert.equal(
    await createHostMethods({} as ProxyHub, undefined)
      .forRun()
      .handle('sandbox_packages', {}, context),
    null,
  );
});
