// What the extension shows of a sandbox report: the status bar's words and the Diagnose
// panel's HTML (verdict, every check by name, problems, one button per fix).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RuntimeStatus, SandboxReport } from '../../src/sandbox/engines/detect.ts';
import { diagnoseHtml, headline, statusText, verdict } from '../../src/extension/panels/report-view.ts';

const assets = { nonce: 'N0NCE', cspSource: 'vscode-webview:', styleUri: 'style.css', scriptUri: 'script.js' };

function imageMissing(): RuntimeStatus {
  return {
    name: 'podman',
    command: '/usr/bin/podman',
    state: 'image-missing',
    version: '5.4.2',
    rootless: true,
    cgroupVersion: 'v2',
    problems: ['The sandbox image localhost/none:x is not present in podman; pull it once.'],
    checks: [
      { name: 'installed', ok: true, detail: '/usr/bin/podman (client 5.4.2)' },
      { name: 'daemon', ok: true, detail: 'podman 5.4.2 answers (rootless)' },
      { name: 'limits', ok: true, detail: 'enforced (cgroups v2)' },
      { name: 'image', ok: false, detail: 'localhost/none:x is not present in podman' },
    ],
    fixes: [{ kind: 'pull', label: 'Pull localhost/none:x', command: 'podman pull localhost/none:x' }],
  };
}

function notInstalled(): RuntimeStatus {
  return {
    name: 'docker',
    command: 'docker',
    state: 'not-installed',
    problems: ['docker is not installed.'],
    checks: [{ name: 'installed', ok: false, detail: 'not found on PATH or in the usual install folders' }],
    fixes: [
      { kind: 'install', label: 'Install Docker', url: 'https://docs.docker.com/engine/install/' },
      { kind: 'setting', label: 'Set the path of docker', setting: 'sandbox.dockerPath' },
    ],
  };
}

test('the status bar names the runtime nearest to working and what it lacks', () => {
  const report: SandboxReport = { image: 'localhost/none:x', runtimes: [notInstalled(), imageMissing()] };
  assert.equal(headline(report)?.name, 'podman');
  assert.equal(statusText(report), '$(cloud-download) podman: image missing');
  assert.equal(
    statusText({ image: 'i', runtimes: [{ ...imageMissing(), state: 'start-failed' }] }),
    '$(error) podman: sandbox does not start',
  );
  assert.equal(statusText({ image: 'i', runtimes: [{ ...notInstalled(), state: 'daemon-down' }] }), '$(vm-outline) docker: daemon down');
  const ready = { ...imageMissing(), state: 'ready' as const };
  assert.equal(statusText({ image: 'i', chosen: ready, runtimes: [ready] }), '$(vm-active) podman: ready');
  assert.equal(statusText({ image: 'i', runtimes: [] }), '$(error) Sandbox: check failed');
  // None installed: no runtime is named as if it were the one to fix.
  const none: SandboxReport = { image: 'i', runtimes: [{ ...notInstalled(), name: 'podman' }, notInstalled()] };
  assert.equal(statusText(none), '$(circle-slash) Sandbox: no container runtime');
  assert.equal(verdict(report).tone, 'bad');
});

test('the Diagnose panel shows every check, the problems and a button per fix, under a strict CSP', () => {
  const html = diagnoseHtml({ image: 'localhost/none:x', runtimes: [imageMissing(), notInstalled()] }, assets);
  assert.match(html, /default-src 'none'; style-src vscode-webview:; script-src 'nonce-N0NCE';/);
  assert.match(html, /Not ready: run_python cannot start a sandbox \(podman: image missing\)/);
  assert.match(html, /data-check="image" data-result="failed"/);
  assert.match(html, /data-check="start" data-result="not reached"/);
  assert.match(html, /data-check="installed" data-result="passed"/);
  assert.match(html, /is not present in podman; pull it once\./);
  assert.match(html, /data-runtime="0" data-fix="0" data-do="pull"/);
  assert.match(html, /data-runtime="0" data-fix="0" data-do="copy"/);
  assert.match(html, /data-runtime="1" data-fix="0" data-do="docs"/);
  assert.match(html, /data-runtime="1" data-fix="1" data-do="setting"/);
  assert.match(html, /<code>codeExecutionMode\.sandbox\.dockerPath<\/code>/);
  assert.doesNotMatch(html, /<script>(?!.*nonce)/, 'no inline script without the nonce');
});

test('backticked names in problems show as code, never as backticks, and stay escaped', () => {
  const named = { ...imageMissing(), problems: ['Run `podman system migrate`, then `<b>x</b>`.'] };
  const html = diagnoseHtml({ image: 'i', runtimes: [named] }, assets);
  assert.match(html, /<li>Run <code>podman system migrate<\/code>, then <code>&lt;b&gt;x&lt;\/b&gt;<\/code>\.<\/li>/);
  assert.ok(!html.includes('`'), 'a backtick is left in the page');
});

test('the panel escapes what the runtimes said and disables its buttons while busy', () => {
  const hostile = { ...imageMissing(), problems: ['<img src=x onerror=alert(1)>'] };
  const html = diagnoseHtml({ image: '<b>i</b>', runtimes: [hostile] }, { ...assets, busy: 'Pulling…' });
  assert.ok(!html.includes('<img src=x'), 'problem text is escaped');
  assert.ok(html.includes('&lt;b&gt;i&lt;/b&gt;'));
  assert.match(html, /data-do="pull" disabled/);
  assert.match(html, /class="busy" role="status">Pulling…/);
  assert.match(diagnoseHtml(undefined, assets), /Checking the sandbox…/);
});

test('packages not built or stale: the status bar says so (runs go on), the panel shows the check and a Build button', () => {
  const ready: RuntimeStatus = {
    ...imageMissing(),
    state: 'ready',
    problems: ['The sandbox image with sandbox.packages (numpy) is not built: build it once.'],
    checks: [
      ...imageMissing().checks.slice(0, 3),
      { name: 'image', ok: true, detail: 'present' },
      { name: 'packages', ok: false, detail: 'numpy: not built; runs use img without them' },
      { name: 'start', ok: true, detail: 'ok' },
    ],
    fixes: [{ kind: 'build', label: 'Build the sandbox image with its packages', command: 'code-execution-mode build-image' }],
    packages: { state: 'missing', tag: 'localhost/code-execution-mode-sandbox:0', packages: ['numpy'], stale: [] },
  };
  assert.equal(statusText({ image: 'img', chosen: ready, runtimes: [ready] }), '$(package) podman: packages not built');
  const stale = { ...ready, packages: { state: 'missing' as const, tag: 't', packages: ['numpy'], stale: ['old'] } };
  assert.equal(statusText({ image: 'img', chosen: stale, runtimes: [stale] }), '$(package) podman: packages stale');
  const built = { ...ready, packages: { state: 'built' as const, tag: 't', packages: ['numpy'] } };
  assert.equal(statusText({ image: 'img', chosen: built, runtimes: [built] }), '$(vm-active) podman: ready');
  const html = diagnoseHtml({ image: 'img', chosen: ready, runtimes: [ready] }, assets);
  assert.match(html, /data-check="packages" data-result="failed"/);
  assert.match(html, /data-do="build"[^>]*>Build<\/button>/);
  assert.doesNotMatch(
    diagnoseHtml({ image: 'img', runtimes: [imageMissing()] }, assets),
    /data-check="packages"/,
    'no packages row without packages',
  );
});

test('Diagnose says how far apart sandboxes are: a namespace each, or a shared uid with its fix', () => {
  const ready = (isolation: RuntimeStatus['checks'][number], fixes: RuntimeStatus['fixes'] = []): RuntimeStatus => ({
    ...imageMissing(),
    state: 'ready',
    problems: [],
    checks: [
      ...imageMissing().checks.slice(0, 3),
      { name: 'image', ok: true, detail: 'present' },
      { name: 'start', ok: true, detail: 'ok' },
      isolation,
    ],
    fixes,
  });
  const own = ready({
    name: 'isolation',
    ok: true,
    detail: 'each sandbox in its own user namespace (--userns=auto): no two share a host uid',
  });
  assert.match(
    diagnoseHtml({ image: 'i', chosen: own, runtimes: [own] }, assets),
    /data-check="isolation" data-result="passed">.*sandboxes apart from each other.*each sandbox in its own user namespace/,
  );
  const fix = {
    kind: 'docs' as const,
    label: 'Give Podman a range of ids for sandboxes (as root)',
    command: 'echo containers:2147483647:2147483648 | sudo tee -a /etc/subuid /etc/subgid',
  };
  const shared = ready(
    { name: 'isolation', ok: false, detail: 'sandboxes share uid 65534 on the host: podman cannot give each its own user namespace' },
    [fix],
  );
  const html = diagnoseHtml({ image: 'i', chosen: shared, runtimes: [shared] }, assets);
  assert.match(html, /data-check="isolation" data-result="failed">.*sandboxes share uid 65534 on the host/);
  assert.match(html, /sudo tee -a \/etc\/subuid \/etc\/subgid<\/code>.*data-do="terminal"/);
  assert.equal(verdict({ image: 'i', chosen: shared, runtimes: [shared] }).tone, 'ok', 'the sandbox still runs');
  assert.match(diagnoseHtml({ image: 'i', runtimes: [imageMissing()] }, assets), /data-check="isolation" data-result="not reached"/);
});

test('Diagnose names the engine endpoint, and a missing connection with its setting', () => {
  const remote: RuntimeStatus = {
    ...imageMissing(),
    checks: [
      { name: 'installed', ok: true, detail: '/usr/bin/podman (client 5.4.2)' },
      {
        name: 'engine',
        ok: true,
        detail: "connection 'machine-default' (remote engine ssh://core@127.0.0.1:50123/run/podman.sock) (podman's default connection)",
      },
    ],
  };
  const html = diagnoseHtml({ image: 'i', runtimes: [remote] }, assets);
  assert.match(html, /data-check="engine" data-result="passed"/);
  assert.match(html, /engine endpoint<\/th>/);
  assert.match(html, /connection &#39;machine-default&#39; \(remote engine ssh:\/\/core@127\.0\.0\.1:50123/);
  const missing: RuntimeStatus = {
    ...notInstalled(),
    name: 'podman',
    state: 'daemon-down',
    checks: [{ name: 'engine', ok: false, detail: "sandbox.podmanConnection names podman connection 'gone', which does not exist" }],
    fixes: [{ kind: 'setting', label: 'Change sandbox.podmanConnection', setting: 'sandbox.podmanConnection' }],
  };
  const bad = diagnoseHtml({ image: 'i', runtimes: [missing] }, assets);
  assert.match(bad, /data-check="engine" data-result="failed"/);
  assert.match(bad, /Change sandbox\.podmanConnection/);
});

test('the report has a row for sandbox.network when it is given, escaped', () => {
  const report: SandboxReport = { image: 'i', runtimes: [] };
  assert.doesNotMatch(diagnoseHtml(report, assets), /class="network"/);
  const html = diagnoseHtml(report, { ...assets, network: 'api.example.com:443, <b>; asks about other hosts' });
  assert.match(
    html,
    /<p class="network">Network \(<code>sandbox\.network<\/code>\): api\.example\.com:443, &lt;b&gt;; asks about other hosts<\/p>/,
  );
});
