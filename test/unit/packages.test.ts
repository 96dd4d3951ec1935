// sandbox.packages and pipIndexUrl: what is accepted, the caps, the canonical list, the tag,
// the Containerfile and build arguments, and how a failed build is named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/load.ts';
import {
  isLoopbackUrl,
  MAX_PACKAGES,
  MAX_REQUIREMENT_CHARS,
  normalizeName,
  normalizePackages,
  packageNames,
} from '../../src/config/packages.ts';
import { defaultSandboxConfig } from '../../src/config/schema.ts';
import {
  buildArgs,
  buildEnv,
  containerfile,
  DERIVED_LABELS,
  derivedSpec,
  PACKAGES_DIR,
  packagesSummary,
} from '../../src/sandbox/image/derived.ts';
import {
  builderWatch,
  describeBuildFailure,
  MAX_PIP_WORDS_CHARS,
  MAX_PROGRESS_LINE_CHARS,
  progressLine,
} from '../../src/sandbox/image/build-output.ts';
import { createdAt } from '../../src/sandbox/image/build.ts';

function errorOf(sandbox: unknown): string {
  try {
    parseConfig({ sandbox });
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.message;
  }
  assert.fail('expected a ConfigError');
}

test('plain requirements are accepted; options, URLs, paths and markers are refused, naming the entry', () => {
  const ok = [
    'numpy',
    'pandas>=2,<3',
    'requests[socks]==2.32.3',
    'scikit-learn',
    'zope.interface',
    'a',
    'Foo_Bar ~= 1.4',
    'x===1.0+local',
    'pkg[a, b] >=1',
  ];
  assert.deepEqual(parseConfig({ sandbox: { packages: ok } }).sandbox.packages, ok);
  const refused: [string, RegExp][] = [
    ['-r requirements.txt', /option/],
    ['--index-url=http://evil', /option/],
    ['-e .', /option/],
    [' --pre', /option/],
    ['pkg @ https://example.com/pkg.whl', /URL/],
    ['https://example.com/pkg.whl', /URL/],
    ['git+ssh://git@host/repo', /URL/],
    ['./local/pkg', /path/],
    ['/tmp/pkg.whl', /path/],
    ['..\\pkg', /path/],
    ['numpy; python_version>"3"', /marker/],
    ['numpy && true', /not a requirement/],
    ['numpy"]\nRUN ["sh', /not a requirement/],
    ['num py', /not a requirement/],
    ['', /empty/],
    ['x'.repeat(MAX_REQUIREMENT_CHARS + 1), /longer than/],
  ];
  for (const [requirement, why] of refused) {
    const message = errorOf({ packages: ['numpy', requirement] });
    assert.match(message, /sandbox\.packages\.1: /, requirement);
    assert.match(message, why, requirement);
  }
  assert.ok(parseConfig({ sandbox: { packages: ['x'.repeat(MAX_REQUIREMENT_CHARS)] } }));
});

test(`at most ${MAX_PACKAGES} packages`, () => {
  const names = Array.from({ length: MAX_PACKAGES + 1 }, (_, i) => `pkg${i}`);
  assert.equal(parseConfig({ sandbox: { packages: names.slice(0, MAX_PACKAGES) } }).sandbox.packages.length, MAX_PACKAGES);
  assert.match(errorOf({ packages: names }), /sandbox\.packages: at most 64 packages/);
});

test('pipIndexUrl must be an http(s) URL without credentials', () => {
  assert.equal(
    parseConfig({ sandbox: { pipIndexUrl: 'https://pypi.example.com/simple/' } }).sandbox.pipIndexUrl,
    'https://pypi.example.com/simple/',
  );
  assert.match(errorOf({ pipIndexUrl: 'ftp://x/simple' }), /sandbox\.pipIndexUrl: must be an http or https URL/);
  assert.match(errorOf({ pipIndexUrl: 'not a url' }), /sandbox\.pipIndexUrl: is not a URL/);
  assert.match(
    errorOf({ pipIndexUrl: 'https://user:secret@pypi.example.com/simple/' }),
    /sandbox\.pipIndexUrl: must not contain a user name or password/,
  );
  assert.ok(isLoopbackUrl('http://127.0.0.1:8080/simple/'));
  assert.ok(isLoopbackUrl('http://localhost/simple/'));
  assert.ok(isLoopbackUrl('http://[::1]:1/simple/'));
  assert.ok(!isLoopbackUrl('https://pypi.org/simple/'));
});

test('pipIndexUrl carries no credentials in any part, and plain http only reaches this machine', () => {
  const accepted = (url: string) => assert.equal(parseConfig({ sandbox: { pipIndexUrl: url } }).sandbox.pipIndexUrl, url, url);
  for (const url of [
    'https://pypi.org/simple/',
    'https://nexus.example.com/repository/pypi-proxy/simple/',
    'https://example.jfrog.io/artifactory/api/pypi/python-virtual/simple',
    'https://pkgs.dev.azure.com/org/project/_packaging/feed@Local/pypi/simple/',
    'https://gitlab.example.com/api/v4/projects/1234/packages/pypi/simple',
    'https://devpi.example/root/pypi/+simple/',
    'https://mirror.example/python3-packages-2024/simple/',
    'http://127.0.0.1:8080/simple/',
    'http://127.5.6.7/simple/',
    'http://localhost:3141/root/pypi/+simple/',
    'http://[::1]:9/simple/',
  ]) {
    accepted(url);
  }
  const refused = (url: string, why: RegExp) => {
    const message = errorOf({ pipIndexUrl: url });
    assert.match(message, /^sandbox\.pipIndexUrl: /m, url);
    assert.match(message, why, url);
    return message;
  };
  // User info, a query or a fragment: named, with the fix, and the token never repeated.
  refused(
    'https://__token__:pypi-AgEIcHlwaS5vcmc@pypi.example/simple/',
    /must not contain a user name or password.*Fix: .*proxy on this machine/,
  );
  refused('https://alice@pypi.example/simple/', /must not contain a user name or password/);
  const query = refused(
    'https://pypi.example/simple/?token=s3cr3tT0kenValue99',
    /must not have a query \(\?\.\.\.\) or fragment.*Fix: give the index address without credentials/,
  );
  assert.doesNotMatch(query, /s3cr3tT0kenValue99/);
  refused('https://pypi.example/simple/?mirror=eu', /must not have a query/);
  refused('https://pypi.example/simple/#access_token=abc', /must not have a query \(\?\.\.\.\) or fragment/);
  // Path segments that look like tokens: a well-known prefix, or 16+ letters and digits mixed.
  const path = refused(
    'https://pypi.fury.io/1a2B3c4D5e6F7g8H9i0J/acme/',
    /must not carry credentials: it has a path segment that looks like a token \("1a2B…"\)/,
  );
  assert.doesNotMatch(path, /5e6F7g8H9i0J/);
  refused('https://dl.cloudsmith.io/Xy1AbCdEfGh2IjKl/acme/repo/python/simple/', /path segment that looks like a token/);
  refused('https://example.com/glpat-abcDEF/simple/', /path segment that looks like a token/);
  refused('https://example.com/%67hp_abc/simple/', /path segment that looks like a token/);
  // Plain http is refused unless the index is on this machine.
  refused(
    'http://pypi.example.com/simple/',
    /must be https: plain http is accepted only for an index on this machine \(127\.0\.0\.0\/8, \[::1\], localhost\)\. Fix: use the https address/,
  );
  refused('http://10.0.0.5/simple/', /must be https/);
  refused('http://127.0.0.1.example.com/simple/', /must be https/);
  refused('http://[::2]/simple/', /must be https/);
});

test('the list is normalised: the same packages written differently name the same image', () => {
  assert.deepEqual(normalizePackages(['Pandas >= 2 , < 3', 'numpy', 'NumPy', 'Requests[Socks,HTTP2]']), [
    'numpy',
    'pandas<3,>=2',
    'requests[http2,socks]',
  ]);
  assert.deepEqual(packageNames(['Pandas>=2', 'zope.interface']), ['pandas', 'zope-interface']);
  const base = { image: 'python:3.14-slim', packages: ['numpy', 'pandas>=2'] };
  const a = derivedSpec(base, 'sha256:abc');
  assert.equal(
    a.tag,
    derivedSpec({ ...base, packages: ['PANDAS >= 2', 'numpy', 'numpy'] }, 'abc').tag,
    'order, case, spaces and the id prefix do not matter',
  );
  assert.notEqual(a.tag, derivedSpec({ ...base, packages: ['numpy'] }, 'abc').tag, 'another list is another image');
  assert.notEqual(a.tag, derivedSpec(base, 'abd').tag, 'another base image is another image');
  assert.notEqual(
    a.tag,
    derivedSpec({ ...base, pipIndexUrl: 'https://mirror.example/simple/' }, 'abc').tag,
    'another index is another image',
  );
  assert.match(a.tag, /^localhost\/code-execution-mode-sandbox:[0-9a-f]{20}$/);
  assert.equal(
    packagesSummary(
      Array.from({ length: 10 }, (_, i) => `p${i}`),
      3,
    ),
    'p0, p1, p2 (+7 more)',
  );
});

test('the Containerfile installs from the exact base into a read-only path on PYTHONPATH, in exec form', () => {
  const spec = derivedSpec(
    { image: 'python:3.14-slim', packages: ['numpy', 'pandas>=2'], pipIndexUrl: 'http://127.0.0.1:9/simple/' },
    'sha256:0123',
  );
  const text = containerfile(spec);
  const lines = text.trim().split('\n');
  assert.equal(lines[0], 'FROM 0123');
  const run = lines.find((l) => l.startsWith('RUN ["env"'))!;
  const argv = JSON.parse(run.slice(4)) as string[];
  // The base image's pip configuration is not read: no index but the configured one.
  assert.deepEqual(argv.slice(0, 5), ['env', 'PIP_CONFIG_FILE=/dev/null', 'python3', '-m', 'pip']);
  for (const flag of ['--disable-pip-version-check', '--no-input', '--no-cache-dir']) assert.ok(argv.includes(flag), flag);
  assert.deepEqual(argv.slice(argv.indexOf('--target'), argv.indexOf('--target') + 2), ['--target', PACKAGES_DIR]);
  assert.deepEqual(argv.slice(argv.indexOf('--index-url'), argv.indexOf('--index-url') + 2), ['--index-url', 'http://127.0.0.1:9/simple/']);
  assert.deepEqual(argv.slice(-2), ['numpy', 'pandas>=2']);
  assert.ok(lines.some((l) => l.startsWith(`ENV PYTHONPATH=${PACKAGES_DIR}`)));
  assert.ok(!lines.some((l) => /^RUN [^[]/.test(l)), 'no shell form');
  assert.ok(
    !containerfile(derivedSpec({ image: 'x', packages: ['numpy'] }, 'abc')).includes('--index-url'),
    'pip default index when none is set',
  );
});

test('build arguments: labels as flags, host network only for a loopback index, classic builder for docker', () => {
  const local = derivedSpec({ image: 'img', packages: ['numpy'], pipIndexUrl: 'http://127.0.0.1:9/simple/' }, 'abc');
  const remote = derivedSpec({ image: 'img', packages: ['numpy'], pipIndexUrl: 'https://pypi.example/simple/' }, 'abc');
  const podman = buildArgs('podman', local, '/tmp/x/Containerfile', '/tmp/x');
  assert.deepEqual(podman.slice(0, 2), ['build', '--pull=never']);
  assert.ok(podman.join(' ').includes('--network host'));
  assert.ok(podman.includes(`${DERIVED_LABELS.packages}=["numpy"]`));
  assert.ok(podman.includes(`${DERIVED_LABELS.baseId}=abc`));
  assert.equal(podman.at(-1), '/tmp/x');
  assert.ok(!podman.includes('--iidfile'));
  assert.ok(podman.includes('--log-level=debug'), "podman logs its build container's ID");
  assert.ok(!buildArgs('docker', local, 'f', 'd').includes('--log-level=debug'));
  const withId = buildArgs('podman', local, '/tmp/x/Containerfile', '/tmp/x', '/tmp/x/image-id');
  assert.equal(withId[withId.indexOf('--iidfile') + 1], '/tmp/x/image-id', "the built image's ID, to check its name by");
  assert.equal(withId.at(-1), '/tmp/x');
  assert.ok(!buildArgs('docker', remote, 'f', 'd').includes('--network'), 'a remote index goes through the default build network');
  assert.deepEqual(buildEnv('docker'), { DOCKER_BUILDKIT: '0' });
  assert.deepEqual(buildEnv('podman'), {});
});

test("a podman build's container is known by the ID podman logs before the first RUN step, and never from the packages' output", () => {
  const id = (c: string) => c.repeat(64);
  const log = (msg: string) => `time="2026-12-01T10:00:00Z" level=debug msg="${msg}"`;
  const watch = builderWatch();
  assert.equal(watch.take('time="2026-12-01T10:00:00Z" level=info msg="podman filtering at log level debug"'), true, 'not progress');
  assert.equal(watch.take('STEP 1/10: FROM 0123'), false, 'progress');
  assert.equal(watch.take(log(`Container ID: ${id('a')}`)), true);
  assert.equal(watch.id, id('a'));
  watch.take(log(`Container ID: ${id('b')}`));
  assert.equal(watch.id, id('a'), 'the first only');
  assert.equal(watch.take('time="2026-12-01T10:00:00Z" level=warning msg="something"'), false, "podman's warnings are shown");

  const reordered = builderWatch();
  reordered.take('STEP 4/10: RUN ["env","PIP_CONFIG_FILE=/dev/null"]');
  reordered.take(log(`Container ID: ${id('c')}`));
  assert.equal(reordered.id, id('c'), 'read just after the RUN header (stdout and stderr in either order)');
  const late = builderWatch();
  late.take('STEP 4/10: RUN ["env","PIP_CONFIG_FILE=/dev/null"]');
  late.take('Looking in indexes: http://127.0.0.1:9/simple/');
  assert.equal(late.take(log(`Container ID: ${id('c')}`)), true, 'hidden, but');
  assert.equal(late.id, undefined, 'a line after the RUN step printed (a package could print it) is not believed');
  const malformed = builderWatch();
  malformed.take(log(`Container ID: ${id('c')}"; rm -rf`));
  malformed.take(log('Container ID: --all'));
  assert.equal(malformed.id, undefined);
});

test('a failed build is named by what pip said, shortened, with the fix', () => {
  const spec = { base: 'img', index: 'http://127.0.0.1:9/simple/', packages: ['nosuch'] };
  const noPip = describeBuildFailure(['STEP 3/5: RUN ...', '/usr/bin/python3: No module named pip', 'Error: building at STEP'], spec);
  assert.equal(noPip.kind, 'no-pip');
  assert.match(noPip.message, /has no pip.*No module named pip.*Fix: set sandbox\.image/);
  const unreachable = describeBuildFailure(
    [
      "WARNING: Retrying (Retry(total=0, connect=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object>: Failed to establish a new connection: [Errno 111] Connection refused')': /simple/nosuch/",
      'ERROR: Could not find a version that satisfies the requirement nosuch (from versions: none)',
      'ERROR: No matching distribution found for nosuch',
    ],
    spec,
  );
  assert.equal(unreachable.kind, 'index-unreachable');
  assert.match(
    unreachable.message,
    /could not be reached.*ERROR: Could not find a version.*Fix: check the network and sandbox\.pipIndexUrl/,
  );
  const missing = describeBuildFailure(
    [
      'ERROR: Could not find a version that satisfies the requirement nosuch (from versions: none)',
      'ERROR: No matching distribution found for nosuch',
    ],
    spec,
  );
  assert.equal(missing.kind, 'not-found');
  assert.match(missing.message, /no package matching "nosuch".*Fix: correct the name or version in sandbox\.packages/);
  const long = describeBuildFailure([`ERROR: ${'x'.repeat(5000)}`], spec);
  assert.ok(long.message.length < MAX_PIP_WORDS_CHARS + 300, `${long.message.length} characters`);
  assert.equal(long.kind, 'build-failed');
});

test('build output lines lose colour codes and control characters and are capped', () => {
  assert.equal(progressLine('\x1b[91m/usr/bin/python3: No module named pip\x1b[0m'), '/usr/bin/python3: No module named pip');
  assert.equal(progressLine('a\x07b\x1b]0;title'), 'ab]0;title');
  assert.equal(progressLine('   \x1b[0m  '), undefined);
  const long = progressLine('x'.repeat(100_000))!;
  assert.equal(long.length, MAX_PROGRESS_LINE_CHARS);
  assert.ok(long.endsWith('...'));
});

test('packages default to none, and the sandbox config carries them', () => {
  assert.deepEqual(defaultSandboxConfig().packages, []);
  assert.equal(defaultSandboxConfig().pipIndexUrl, undefined);
});

test('image creation times as docker and podman print them; unreadable ones sort last', () => {
  assert.equal(createdAt('2026-12-01T02:35:52.938716468Z'), Date.parse('2026-12-01T02:35:52.938Z'));
  assert.equal(createdAt('2026-12-01 02:35:45.997868851 +0000 UTC'), Date.parse('2026-12-01T02:35:45.997Z'));
  assert.equal(createdAt('2026-12-01 03:35:45 +0100 CET'), Date.parse('2026-12-01T02:35:45Z'));
  assert.equal(createdAt('yesterday'), 0);
  assert.equal(createdAt(''), 0);
});

test("normalizeName: PEP 503, the one form sandbox.packages and an image's distributions are compared in", () => {
  assert.equal(normalizeName('Foo.Bar__baz--Qux'), 'foo-bar-baz-qux');
  assert.equal(normalizeName('numpy'), 'numpy');
});
