// sandbox.packages end to end, on real podman and docker: a pure-Python wheel made here, served
// by a PEP 503 index on 127.0.0.1, built into the derived image from a base with pip; the check
// before and after, a run that imports it through the real bridge, the listing and capabilities
// resource that name it, a refused build (index unreachable, no such package), a stale image
// after the list changes, and concurrent builds joined. Every image built here is removed.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test as nodeTest } from 'node:test';
import { execa } from 'execa';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RuntimeName, SandboxConfig } from '../../src/config/schema.ts';
import { BUILD_LABEL, buildArgs, buildEnv, derivedSpec, packagesState } from '../../src/sandbox/image/derived.ts';
import { buildPackagesImage, KEEP_OLDER_IMAGES, PackageBuildError } from '../../src/sandbox/image/build.ts';
import { checkSandbox } from '../../src/sandbox/engines/detect.ts';
import { startBridge, textOf } from '../helpers/bridge.ts';
import { TEST_DATA_IMAGE, testRuntimes, testSandbox } from '../helpers/env.ts';
import { servePipIndex, type PipIndex } from '../helpers/pip-index.ts';
import { until } from '../helpers/wait.ts';

const cli = (args: string[]) => execa(process.execPath, ['dist/cli.js', ...args], { reject: false });

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function configFile(sandbox: Record<string, unknown>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cem-packages-'));
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ stateDir: join(dir, 'state'), sandbox }));
  return file;
}

async function imageExists(runtime: RuntimeName, image: string): Promise<boolean> {
  return (await execa(runtime, ['image', 'inspect', '--format', '{{.Id}}', image], { reject: false })).exitCode === 0;
}

/**
 * An image with the labels and tag a package build of `sandbox` gives, but nothing installed:
 * built from the base with the product's own build arguments and a Containerfile of FROM alone.
 */
async function labelledImage(runtime: RuntimeName, sandbox: SandboxConfig): Promise<string> {
  const baseId = (await execa(runtime, ['image', 'inspect', '--format', '{{.Id}}', sandbox.image])).stdout;
  const spec = derivedSpec(sandbox, baseId);
  const dir = await mkdtemp(join(tmpdir(), 'cem-packages-labelled-'));
  try {
    await writeFile(join(dir, 'Containerfile'), `FROM ${spec.baseId}\n`);
    const built = await execa(runtime, buildArgs(runtime, spec, join(dir, 'Containerfile'), dir), {
      reject: false,
      env: buildEnv(runtime),
    });
    assert.equal(built.exitCode, 0, built.stderr.slice(-2000));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return spec.tag;
}

/** This file's base image: the data image with a label, so an image of its own (see the describe below). */
const BASE_NAME = 'cem-test-packages-base';

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

/**
 * What a failed build of `tag` left: images labelled with it and, on podman, build containers
 * from this file's base (named for the base's name: another file's build from another image,
 * going on now, is not counted).
 */
async function buildLeftovers(runtime: RuntimeName, tag: string): Promise<string[]> {
  const images = lines((await execa(runtime, ['images', '--all', '--quiet', '--filter', `label=${BUILD_LABEL}=${tag}`])).stdout);
  return [...images, ...(await baseBuilders(runtime))];
}

/** Podman's build containers from this file's base (`<name>-working-container`, `-2`...). */
async function baseBuilders(runtime: RuntimeName): Promise<string[]> {
  if (runtime !== 'podman') return [];
  const builder = new RegExp(`^${BASE_NAME}-working-container(-\\d+)?$`);
  // Podman 4 fails the listing ("container not known") while another build container is being
  // removed (another file's build, under load): listed again until it answers.
  const names = await until('podman to list the build containers', async () => {
    const listed = await execa('podman', ['ps', '--all', '--external', '--format', '{{.Names}}'], { reject: false });
    return listed.exitCode === 0 ? listed.stdout : false;
  });
  return lines(names).filter((n) => builder.test(n));
}

/**
 * The data image with a label of this file's, as `name`: an image ID of its own, so podman names
 * this file's build containers for it. Podman 4 can lose a name set while another process changes
 * names, so the name is checked, and set again by ID.
 */
async function ownBase(runtime: RuntimeName, name: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'cem-packages-base-'));
  await writeFile(join(dir, 'Containerfile'), `FROM ${TEST_DATA_IMAGE}\nLABEL io.code-execution-mode.test=packages-base\n`);
  const pull = runtime === 'podman' ? ['--pull=never'] : [];
  const built = await execa(
    runtime,
    ['build', ...pull, '--iidfile', join(dir, 'id'), '--tag', name, '--file', join(dir, 'Containerfile'), dir],
    {
      reject: false,
      env: { DOCKER_BUILDKIT: '0' },
    },
  );
  assert.equal(built.exitCode, 0, built.stderr);
  const id = (await readFile(join(dir, 'id'), 'utf8')).trim().replace(/^sha256:/, '');
  await rm(dir, { recursive: true, force: true });
  await until(`${name} to name ${id}`, async () => {
    const named = await execa(runtime, ['image', 'inspect', '--format', '{{.Id}}', name], { reject: false });
    if (named.stdout.trim().replace(/^sha256:/, '') === id) return true;
    await execa(runtime, ['tag', id, name], { reject: false });
    return false;
  });
}

// Builds are slow: the first runtime runs every case; the others run the smoke cases (a build a
// run uses, and a failed build that leaves nothing), since each runtime builds its own way.
const SMOKE = new Set([
  'build-image builds it with progress; a run imports the package; the listing and capabilities name it',
  'no such package: named, with the fix, nothing left',
]);

for (const [order, runtime] of testRuntimes().entries()) {
  const test = (name: string, fn: () => Promise<void>): void => {
    if (order === 0 || SMOKE.has(name)) void nodeTest(name, fn);
    else void nodeTest.skip(`${name} (built on ${testRuntimes()[0]} only)`, fn);
  };
  describe(`packages on ${runtime}`, () => {
    let index: PipIndex;
    const built = new Set<string>();
    // A base image of this file's own: a build removes the older package images of its base (by
    // name), so another file's build on the data image (run at the same time) would remove this
    // file's images, and this file's builds would remove the other's; and podman names build
    // containers for the base, so this file's are told from another file's.
    const base = `localhost/${BASE_NAME}:${runtime}`;
    const sandboxWith = (packages: string[], pipIndexUrl = index.url) => testSandbox(runtime, { image: base, packages, pipIndexUrl });

    before(async () => {
      assert.ok(await imageExists(runtime, TEST_DATA_IMAGE), `${TEST_DATA_IMAGE} must be present in ${runtime}`);
      await ownBase(runtime, base);
      index = await servePipIndex({
        'cem-hello': { version: '1.0', value: 'hello' },
        'cem-other': { version: '2.0', value: 'other' },
        'cem-third': { version: '0.1', value: 'third' },
      });
    });

    after(async () => {
      for (const tag of built) await execa(runtime, ['rmi', '--force', tag], { reject: false });
      await execa(runtime, ['rmi', base], { reject: false });
      await index?.close();
    });

    test('not built: the check names it with the fix, and runs use the base image', async () => {
      const sandbox = sandboxWith(['cem-hello', 'cem_other==2.0']);
      const report = await checkSandbox(sandbox);
      const chosen = report.chosen!;
      assert.ok(chosen, 'the sandbox is usable without the packages');
      const check = chosen.checks.find((c) => c.name === 'packages');
      assert.equal(check?.ok, false);
      // Other package images of this base (another project's) make it 'stale' rather than 'not built'.
      assert.match(check.detail, /cem-hello, cem-other==2.0: (not built|stale)/);
      assert.ok(chosen.fixes.some((f) => f.kind === 'build' && f.command === 'code-execution-mode build-image'));
      assert.equal(chosen.image, undefined, 'runs use sandbox.image');
    });

    test('build-image builds it with progress; a run imports the package; the listing and capabilities name it', async () => {
      const sandbox = {
        runtime,
        image: base,
        packages: ['cem-hello', 'cem_other==2.0'],
        pipIndexUrl: index.url,
        memory: '256m',
      };
      const file = await configFile(sandbox);
      const started = Date.now();
      const result = await cli(['build-image', '--config', file]);
      const seconds = (Date.now() - started) / 1000;
      const state = await packagesState(runtime, sandboxWith(sandbox.packages));
      if (state?.state === 'built') built.add(state.tag);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.match(result.stderr, /Successfully installed cem-hello-1\.0 cem-other-2\.0/);
      assert.match(result.stderr, /Ready: localhost\/code-execution-mode-sandbox:[0-9a-f]{20}/);
      assert.equal(state?.state, 'built');
      const buildSeconds = /Ready: \S+ \(([\d.]+) s\)/.exec(result.stderr)?.[1];
      process.stderr.write(
        `# ${runtime}: derived image with 2 packages: build ${buildSeconds} s, build-image command ${seconds.toFixed(1)} s in all\n`,
      );

      const again = await cli(['build-image', '--config', file]);
      assert.equal(again.exitCode, 0, again.stderr);
      assert.match(again.stderr, /already built/);

      const report = await checkSandbox(sandboxWith(sandbox.packages));
      assert.equal(report.chosen?.checks.find((c) => c.name === 'packages')?.ok, true);
      assert.equal(report.chosen?.image, state?.state === 'built' ? state.tag : 'built');

      const bridge = await startBridge({ sandbox });
      try {
        const [tool] = (await bridge.client.listTools()).tools;
        // The packages image's distributions, its base's included, the notable ones first (sandbox.packages are named below).
        assert.match(
          tool!.description ?? '',
          /^Python 3 sandbox, with packages numpy, matplotlib, scipy and \d+ more \(no pip, no network\)/,
        );
        assert.match(
          bridge.client.getInstructions() ?? '',
          /Python packages installed besides the standard library: cem-hello, cem-other \(no pip\)/,
        );
        const ok = await bridge.call('import cem_hello, cem_other\nprint(cem_hello.VALUE, cem_other.VALUE, cem_hello.__file__)');
        assert.notEqual(ok.isError, true, textOf(ok));
        assert.match(textOf(ok), /hello other \/opt\/code-execution-mode\/packages\/cem_hello\/__init__\.py/);
        // Still no network and no writing into the packages.
        const locked = await bridge.call(
          'import os\nprint(os.access("/opt/code-execution-mode/packages/cem_hello", os.W_OK))\nimport socket\nsocket.create_connection(("127.0.0.1", 1), timeout=2)',
        );
        assert.match(textOf(locked), /False/);
        assert.match(textOf(locked), /no network|Network is unreachable|Errno/);
        const missing = await bridge.call('import pandas_not_here');
        assert.match(
          textOf(missing),
          /Installed besides the standard library: numpy, matplotlib, scipy, [^\n]* and \d+ more\. pip is not available/,
        );
        assert.match(textOf(missing), /sandbox\.packages/);
        const resource = await bridge.client.readResource({ uri: 'code-execution-mode://capabilities' });
        const text = resource.contents.map((c) => ('text' in c ? c.text : '')).join('');
        assert.match(text, /Python packages installed \(sandbox\.packages\): cem-hello, cem-other==2\.0/);
      } finally {
        await bridge.close();
      }
    });

    test('changing the list makes the image stale: the check says so, runs use the base image, the capabilities say how to build', async () => {
      const sandbox = sandboxWith(['cem-hello', 'cem_other==2.0', 'cem-third']);
      const state = await packagesState(runtime, sandbox);
      assert.equal(state?.state, 'missing');
      assert.ok(state?.state === 'missing' && state.stale.some((tag) => built.has(tag)), 'the older image is named as stale');
      const check = (await checkSandbox(sandbox)).chosen?.checks.find((c) => c.name === 'packages');
      assert.equal(check?.ok, false);
      assert.match(check.detail, /stale/);
      // No spare: the bridge's first container (of the base image) says what runs have: the image's own packages, not sandbox.packages.
      const bridge = await startBridge({
        sandbox: { runtime, image: base, packages: sandbox.packages, pipIndexUrl: index.url, prewarm: false },
      });
      try {
        const [tool] = (await bridge.client.listTools()).tools;
        assert.match(tool!.description ?? '', /^Python 3 sandbox, with packages numpy, matplotlib, scipy and \d+ more \(/);
        assert.doesNotMatch(bridge.client.getInstructions() ?? '', /Python packages installed/);
        const run = await bridge.call('import importlib.util\nprint(importlib.util.find_spec("cem_hello") is None)');
        assert.match(textOf(run), /True/);
        const resource = await bridge.client.readResource({ uri: 'code-execution-mode://capabilities' });
        const text = resource.contents.map((c) => ('text' in c ? c.text : '')).join('');
        assert.match(
          text,
          /not built for the current list: runs use the base image without them\. Ask the user to run `code-execution-mode build-image`/,
        );
      } finally {
        await bridge.close();
      }
    });

    test('a bridge started before the build runs new sessions in the built image', async () => {
      const packages = ['cem-hello'];
      // With a spare container started ahead (prewarm): one of the base image must not serve the new session.
      const bridge = await startBridge({ sandbox: { runtime, image: base, packages, pipIndexUrl: index.url, prewarm: true } });
      try {
        const before = await bridge.call('import importlib.util\nprint(importlib.util.find_spec("cem_hello") is None)');
        assert.match(textOf(before), /True/);
        // The base image has numpy and matplotlib of its own: the listing says so already.
        assert.match((await bridge.client.listTools()).tools[0]!.description ?? '', /with packages/);
        let listChanged = 0;
        bridge.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void listChanged++);
        const outcome = await buildPackagesImage(sandboxWith(packages), () => {});
        built.add(outcome.tag);
        // The bridge looks again for a missing packages image every 5 s, without a run too.
        await until('the bridge to find the built image', () => /the image with them is built/.test(bridge.stderr()), 15_000);
        const listed = (await bridge.client.listTools()).tools[0]!.description ?? '';
        const after = await bridge.call('import cem_hello\nprint(cem_hello.VALUE)', { session: 'fresh' });
        assert.match(textOf(after), /hello/);
        // The new image's first container says what it has: the listing counts cem-hello from then
        // on, and the client is told once (not before: the listing had not changed).
        await until('a tools/list_changed', () => listChanged > 0);
        await bridge.client.ping();
        assert.equal(listChanged, 1, 'tools/list_changed was sent once');
        const now = (await bridge.client.listTools()).tools[0]!.description ?? '';
        assert.match(now, /^Python 3 sandbox, with packages/);
        assert.notEqual(now, listed);
        const resource = await bridge.client.readResource({ uri: 'code-execution-mode://capabilities' });
        assert.match(
          resource.contents.map((c) => ('text' in c ? c.text : '')).join(''),
          /Python packages installed \(sandbox\.packages\): cem-hello/,
        );
      } finally {
        await bridge.close();
      }
    });

    test('two builds at once share one build', async () => {
      const sandbox = sandboxWith(['cem-third']);
      const downloads = () => index.requests.filter((p) => p.startsWith('/files/cem_third')).length;
      const before = downloads();
      const lines: string[][] = [[], []];
      const [a, b] = await Promise.all([0, 1].map((i) => buildPackagesImage(sandbox, (line) => lines[i]!.push(line))));
      built.add(a!.tag);
      assert.equal(a!.tag, b!.tag);
      assert.equal(downloads() - before, 1, 'the wheel was fetched once');
      assert.ok(
        lines.some((l) => l.some((x) => /already running; waiting/.test(x))),
        'the second caller was told it joined',
      );
      assert.ok(await imageExists(runtime, a!.tag));
    });

    test('a build removes the older package images of its base but the newest few, never the new one nor an image of another name', async () => {
      // The older images carry a build's labels without its pip step (what the pruning reads is
      // the labels and the dates); only the last build, whose pruning is checked, installs.
      const first = await labelledImage(runtime, sandboxWith(['cem-hello==1.0', 'cem-third==0.1']));
      built.add(first);
      // Another name for the same image (as a user's own tag would be): it carries our labels but is not ours.
      const foreign = `localhost/cem-test-foreign:${runtime}`;
      await execa(runtime, ['tag', first, foreign]);
      built.add(foreign);
      // Newer images of other lists (another project's, say): the newest few are kept.
      const kept: string[] = [];
      const lines: string[] = [];
      for (const list of [
        ['cem-third==0.1'],
        ['cem-other==2.0', 'cem-third==0.1'],
        ['cem-hello==1.0', 'cem-other==2.0', 'cem-third==0.1'],
      ].slice(0, KEEP_OLDER_IMAGES)) {
        const newer = await labelledImage(runtime, sandboxWith(list));
        built.add(newer);
        kept.push(newer);
      }
      const second = await buildPackagesImage(sandboxWith(['cem-hello', 'cem-other']), (line) => lines.push(line));
      built.add(second.tag);
      const removed = second.removed;
      assert.equal(second.reused, false);
      // The first image is older than KEEP_OLDER_IMAGES newer ones once the last is built.
      assert.ok(removed.includes(first), `removed: ${removed.join(', ')}`);
      assert.ok(!removed.includes(second.tag) && !removed.includes(foreign) && !kept.some((tag) => removed.includes(tag)));
      assert.equal(await imageExists(runtime, first), false, 'the older image is gone');
      assert.equal(await imageExists(runtime, second.tag), true, 'the new one stays');
      assert.equal(await imageExists(runtime, foreign), true, 'an image of another name stays');
      for (const tag of kept) assert.equal(await imageExists(runtime, tag), true, `${tag}, one of the newest older images, stays`);
      assert.ok(lines.some((l) => l.startsWith('Removed older package images') && l.includes(first)));
      const state = await packagesState(runtime, sandboxWith(['cem-hello', 'cem-other']));
      assert.equal(state?.state, 'built');
    });

    test("an unreachable index refuses the build with pip's words and the fix, exit 3, no image", async () => {
      const url = `http://127.0.0.1:${await closedPort()}/simple/`;
      const sandbox = { runtime, image: base, packages: ['cem-hello'], pipIndexUrl: url };
      const result = await cli(['build-image', '--config', await configFile(sandbox)]);
      assert.equal(result.exitCode, 3, result.stderr);
      assert.match(result.stderr, /could not be reached \(pip: .*(Connection refused|NewConnectionError|No matching distribution)/);
      assert.match(result.stderr, /Fix: check the network and sandbox\.pipIndexUrl/);
      const state = await packagesState(runtime, sandboxWith(sandbox.packages, url));
      assert.equal(state?.state, 'missing');
      if (state?.state === 'missing') {
        assert.equal(await imageExists(runtime, state.tag), false);
        assert.deepEqual(await buildLeftovers(runtime, state.tag), [], 'nothing of the failed build is left');
      }
    });

    test('a build over its time limit is stopped, and leaves nothing behind', async () => {
      const stalled = await servePipIndex({}, ['cem-slow']);
      try {
        const sandbox = sandboxWith(['cem-slow'], stalled.url);
        const started = Date.now();
        await assert.rejects(
          buildPackagesImage(sandbox, () => {}, { timeoutMs: 4_000 }),
          /took longer than 4 s and was stopped/,
        );
        assert.ok(Date.now() - started < 30_000, 'stopped well before pip would give up');
        const state = await packagesState(runtime, sandbox);
        assert.equal(state?.state, 'missing');
        if (state?.state === 'missing') assert.deepEqual(await buildLeftovers(runtime, state.tag), []);
      } finally {
        await stalled.close();
      }
    });

    test('a stopped build removes its own build container only: another build from the same base goes on and is built', async () => {
      const stalled = await servePipIndex(
        { 'cem-slow': { version: '1.0', value: 'slow' }, 'cem-slow-too': { version: '1.0', value: 'slow too' } },
        ['cem-slow', 'cem-slow-too'],
      );
      const stop = new AbortController();
      let going: Promise<unknown> | undefined;
      try {
        const asked = (name: string) => () => stalled.requests.some((path) => path.replace(/\/$/, '') === `/simple/${name}`);
        // Another project's build from the same base is going on (its build container has the
        // base's plain name) when this one starts (podman numbers its container's name), and stops.
        const goingBuild = buildPackagesImage(sandboxWith(['cem-slow-too'], stalled.url), () => {});
        going = goingBuild;
        await until('the other build to ask the index', asked('cem-slow-too'), 120_000);
        const stopped = buildPackagesImage(sandboxWith(['cem-slow'], stalled.url), () => {}, { signal: stop.signal });
        await until('this build to ask the index', asked('cem-slow'), 120_000);
        stop.abort();
        await assert.rejects(stopped, /was cancelled/);
        if (runtime === 'podman')
          assert.equal((await baseBuilders(runtime)).length, 1, "the other build's container is there, this one's is gone");
        stalled.release();
        const outcome = await goingBuild;
        built.add(outcome.tag);
        const imported = await execa(
          runtime,
          ['run', '--rm', '--network', 'none', outcome.tag, 'python3', '-c', 'import cem_slow_too; print(cem_slow_too.VALUE)'],
          { reject: false },
        );
        assert.equal(imported.stdout.trim(), 'slow too', `the other build is whole: ${imported.stderr}`);
        const state = await packagesState(runtime, sandboxWith(['cem-slow'], stalled.url));
        assert.equal(state?.state, 'missing');
        if (state?.state === 'missing') assert.deepEqual(await buildLeftovers(runtime, state.tag), [], 'nothing of either build is left');
      } finally {
        stop.abort();
        stalled.release();
        await going?.catch(() => undefined);
        await stalled.close();
      }
    });

    test('Ctrl-C on build-image stops the build, and leaves nothing behind', async () => {
      const stalled = await servePipIndex({}, ['cem-slow']);
      try {
        const sandbox = sandboxWith(['cem-slow'], stalled.url);
        const child = execa(process.execPath, ['dist/cli.js', 'build-image', '--config', await configFile(sandbox)], { reject: false });
        // Once pip is waiting on the index, the person presses Ctrl-C.
        await until('pip to ask the index', () => stalled.requests.some((path) => path.startsWith('/simple/cem-slow')), 120_000);
        child.kill('SIGINT');
        const result = await child;
        // The command ends on its own, a failed build (not killed by the signal, which would leave the build to itself).
        assert.equal(result.signal, undefined, result.stderr);
        assert.equal(result.exitCode, 3, result.stderr);
        assert.match(result.stderr, /was cancelled/);
        const state = await packagesState(runtime, sandbox);
        assert.equal(state?.state, 'missing');
        if (state?.state === 'missing')
          assert.deepEqual(await buildLeftovers(runtime, state.tag), [], 'nothing of the stopped build is left');
      } finally {
        await stalled.close();
      }
    });

    test('no such package: named, with the fix, nothing left', async () => {
      const sandbox = sandboxWith(['cem-nosuch']);
      await assert.rejects(
        buildPackagesImage(sandbox, () => {}),
        (error: unknown) => {
          assert.ok(error instanceof PackageBuildError);
          assert.equal(error.kind, 'not-found');
          assert.match(error.message, /no package matching "cem-nosuch".*Fix: correct the name or version in sandbox\.packages/s);
          return true;
        },
      );
      const state = await packagesState(runtime, sandbox);
      if (state?.state === 'missing') assert.deepEqual(await buildLeftovers(runtime, state.tag), []);
      else assert.fail(`expected no image, got ${state?.state}`);
    });
  });
}
