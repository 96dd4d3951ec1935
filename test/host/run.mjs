#!/usr/bin/env node
// Runs a test module inside a real VS Code extension host, offline.
//
// @vscode/test-electron and @vscode/test-web download VS Code from Microsoft, which is not
// reachable here, so this uses code-server (VS Code's server, from npm) and a headless Debian
// Chromium driven by playwright-core. Both come from scripts/host-env.sh, which installs them
// into a cache folder outside the checkout.
//
// Usage:
//   node test/host/run.mjs --extension DIR --suite FILE [--workspace DIR] [--screenshots DIR]
//                          [--timeout SECONDS] [--keep] [--verbose]
//
//   --extension  an unpacked extension (the extension/ folder of an unzipped .vsix)
//   --suite      a CommonJS module exporting run(): Promise<void>; it runs in the extension host
//   --workspace  folder to open (default: an empty folder in the run's temp dir)
//   --screenshots  where screenshots requested by the suite are saved (default: not saved)
//   --timeout    seconds to wait, once the workbench is up, for the suite to report done (default 900)
//   --keep       keep the run's temp dir (logs, settings, results) and print its path
//   --verbose    echo the workbench log (it includes the suite's console output) as it comes
//
// Contract with the suite (see also the report format below):
//   - CEM_HOST_RESULTS (in process.env) is the results file. The suite writes
//     {"done": bool, "tests": [{"name", "ok", "error"?, "ms"?}], "figures"?: {...}} there,
//     ideally via write + rename, and sets done: true last. The extension host's exit code only
//     says whether run() threw, so the file is the result; it may be rewritten as tests finish.
//   - To capture the workbench, the suite writes {"name": "x"} to
//     <dirname(CEM_HOST_RESULTS)>/screenshot-request.json and waits for
//     <same dir>/screenshot-done-x to appear. One request at a time; names: [A-Za-z0-9._-].
//   - To act on the workbench as a user would (VS Code's own dialogs, a webview's buttons), the
//     suite writes {"id": "x", "steps": [...]} to <same dir>/ui-request.json and waits for
//     <same dir>/ui-done-x, which holds {"ok": bool, "error"?: string}. Steps, in order, each
//     waiting up to its timeoutMs (default 20000) for its target:
//       {"waitFor": CSS, "text"?: S}   an element (with that text) is visible
//       {"click": CSS, "text"?: S, "webview"?: true}   click it (in a webview's frame when asked)
//       {"hover": CSS, "text"?: S}     move the mouse over it (toolbars that show on hover)
//       {"type": S} / {"press": KEY}   keyboard input to the focused element
//       {"fill": CSS, "text": S}       set that input's value to S (focused, as if typed) once it
//                                      is visible, and wait until it holds S
//       {"screenshot": NAME, "clip"?: [CSS...], "margin"?: N}   as a screenshot request (saved
//                                      with --screenshots), NAME may start with folder names
//                                      ("themes/run-dark" is saved as themes/run-dark.png); clip:
//                                      only the box around those elements (each the first visible
//                                      match), N pixels wider
//       {"viewport": {"width", "height"}}   resize the window (it starts at 1440x900)
//       {"fits": CSS, "webview": true}  the webview showing CSS scrolls no way sideways: neither its
//                                      page nor any box in it (what is cut off, else, is said)
//       {"shows": CSS, "text": S}      an element with that text shows S whole: no ellipsis, no
//                                      clipping box and no window edge cuts into it
//       {"waitMs": N}                  let the page settle (animations, for screenshots)
//   - Everything in this process's environment (PATH, CONTAINERS_CONF, ...) reaches the suite
//     unchanged (no login-shell environment), plus CEM_HOST_RESULTS. The extension under test
//     is usually not active yet when run() starts: await extension.activate() first.
//
// Output: one line per test, then "N passed, M failed" alone on a line. Exit 0 only when
// M is 0 and N > 0. Progress and diagnostics go to stderr.
//
// Environment: CEM_CACHE (default ~/.cache/code-execution-mode-dev) locates code-server,
// playwright-core and Node 24; CEM_CHROMIUM overrides the browser (default /usr/bin/chromium).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CACHED_NODE_24, DEV_CACHE } from '../../scripts/dev-cache.mjs';

const TOOLS = path.join(DEV_CACHE, 'code-server');
const CHROMIUM = process.env.CEM_CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // Tests use loopback only: everything else goes to a closed local port (loopback bypasses it).
  '--proxy-server=127.0.0.1:9',
];
// Quiets the workbench's own network use (gallery, updates, experiments, telemetry).
const USER_SETTINGS = {
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
  'telemetry.telemetryLevel': 'off',
  'workbench.enableExperiments': false,
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  // Keeps the (empty, signed-out) Chat view out of screenshots; MCP and vscode.lm stay enabled.
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'typescript.disableAutomaticTypeAcquisition': true,
};
// Left in the system temp folder by the server, the git extension and the TypeScript extension.
const SOCKET_RE = /^vscode-(ipc|git)-.*\.sock$/;
const TS_DIR_RE = /^vscode-typescript\d+$/;
// Repeated workbench log lines that say nothing about the suite; kept out of failure summaries.
const LOG_NOISE =
  /Ignoring fetching additional builtin extensions|\[AgentHost\]|\[AccountPolicyGate\]|Creating a socket|connection token|Canceled: Canceled/;
const POLL_MS = 500;

const started = Date.now();
const since = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
const log = (msg) => process.stderr.write(`[host ${since()}] ${msg}\n`);

function usage(msg) {
  if (msg) process.stderr.write(`${msg}\n`);
  process.stderr.write(
    'usage: node test/host/run.mjs --extension DIR --suite FILE [--workspace DIR] ' +
      '[--screenshots DIR] [--timeout SECONDS] [--keep] [--verbose]\n',
  );
  process.exit(2);
}

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      extension: { type: 'string' },
      suite: { type: 'string' },
      workspace: { type: 'string' },
      screenshots: { type: 'string' },
      timeout: { type: 'string', default: '900' },
      keep: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (err) {
  usage(err.message);
}
if (opts.help) usage();
if (!opts.extension || !opts.suite) usage('--extension and --suite are required');
const extensionDir = path.resolve(opts.extension);
const suiteFile = path.resolve(opts.suite);
const timeoutMs = Number(opts.timeout) * 1000;
if (!(timeoutMs > 0)) usage(`bad --timeout ${opts.timeout}`);
if (!fs.existsSync(path.join(extensionDir, 'package.json'))) usage(`no package.json in ${extensionDir}`);
if (!fs.statSync(suiteFile, { throwIfNoEntry: false })?.isFile()) usage(`no suite file ${suiteFile}`);
const screenshotDir = opts.screenshots ? path.resolve(opts.screenshots) : undefined;

// code-server 4.139 requires Node 24; use this Node if it is new enough, else the cached one.
function nodeForCodeServer() {
  if (Number(process.versions.node.split('.')[0]) >= 24) return process.execPath;
  if (fs.existsSync(CACHED_NODE_24)) return CACHED_NODE_24;
  throw new Error('code-server needs Node 24: run scripts/host-env.sh');
}

function resolveTool(name) {
  try {
    return createRequire(path.join(TOOLS, 'package.json')).resolve(name);
  } catch {
    throw new Error(`${name} is not installed in ${TOOLS}: run scripts/host-env.sh`);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function tempLeftovers() {
  try {
    return new Set(fs.readdirSync(os.tmpdir()).filter((f) => SOCKET_RE.test(f) || TS_DIR_RE.test(f)));
  } catch {
    return new Set();
  }
}

// A socket nobody listens on any more; a live one may belong to a concurrent run or a user's VS Code.
function isDeadSocket(file) {
  return new Promise((resolve) => {
    const sock = net.connect(file);
    const done = (dead) => {
      sock.destroy();
      resolve(dead);
    };
    sock.once('connect', () => done(false));
    sock.once('error', (err) => done(err.code === 'ECONNREFUSED' || err.code === 'ENOENT'));
    setTimeout(() => done(false), 1000).unref();
  });
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined; // absent, or caught mid-write: try again on the next poll
  }
}

function tail(file, lines = 40) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

// The TypeScript extension's temp dir is shared by every VS Code of this user: leave it to any
// extension host still running (a concurrent run, a user's own VS Code).
function otherExtensionHostsRunning() {
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`).includes('extensionHost')) return true;
    } catch {
      // gone
    }
  }
  return false;
}

// Processes that left the group (node-pty's setsid for terminals, for instance) still carry
// this run's unique CEM_HOST_RESULTS value in their environment.
function processesWithMarker(marker) {
  const found = [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/environ`).includes(marker)) found.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cem-host-'));
const dirs = {
  config: path.join(tmp, 'config'),
  userData: path.join(tmp, 'user-data'),
  extensions: path.join(tmp, 'extensions'),
  xdgConfig: path.join(tmp, 'xdg', 'config'),
  xdgCache: path.join(tmp, 'xdg', 'cache'),
  xdgData: path.join(tmp, 'xdg', 'data'),
  workspace: opts.workspace ? path.resolve(opts.workspace) : path.join(tmp, 'workspace'),
};
for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
const resultsFile = path.join(tmp, 'results.json');
const requestFile = path.join(tmp, 'screenshot-request.json');
const uiRequestFile = path.join(tmp, 'ui-request.json');
const serverLog = path.join(tmp, 'code-server.log');
const workbenchLog = path.join(tmp, 'workbench.log');
const pageLog = path.join(tmp, 'page-console.log');
const recentLog = []; // first lines of the latest workbench log entries, shown on failure
const leftoversBefore = tempLeftovers();

let server; // the code-server child, leader of its own process group
let browser;
let cleaning;
let interrupted; // the signal that stopped the run, if any

async function cleanup() {
  cleaning ??= (async () => {
    if (browser) {
      await Promise.race([browser.close().catch(() => {}), sleep(10_000)]);
    }
    if (server?.pid) {
      try {
        process.kill(-server.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      for (let i = 0; i < 50 && groupAlive(server.pid); i++) await sleep(100);
      if (groupAlive(server.pid)) {
        log('code-server did not stop on SIGTERM; sending SIGKILL');
        try {
          process.kill(-server.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    for (const pid of processesWithMarker(`CEM_HOST_RESULTS=${resultsFile}\0`)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    for (const name of tempLeftovers()) {
      if (leftoversBefore.has(name)) continue;
      const file = path.join(os.tmpdir(), name);
      if (TS_DIR_RE.test(name)) {
        if (!otherExtensionHostsRunning()) {
          try {
            fs.rmdirSync(file);
          } catch {
            /* not empty: in use */
          }
        }
      } else if (await isDeadSocket(file)) {
        fs.rmSync(file, { force: true });
      }
    }
    if (opts.keep) log(`kept ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
  })();
  return cleaning;
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = signal;
    log(`${signal}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  });
}

async function startServer() {
  const port = await freePort();
  const configFile = path.join(dirs.config, 'config.yaml');
  fs.writeFileSync(configFile, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
  fs.writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify(USER_SETTINGS, null, 2));

  const env = { ...process.env };
  // Settings that would override ours, or tie the server to a VS Code this was started from.
  for (const key of Object.keys(env)) {
    if (key === 'PORT' || key.startsWith('CODE_SERVER_') || key.startsWith('VSCODE_')) delete env[key];
  }
  Object.assign(env, {
    XDG_CONFIG_HOME: dirs.xdgConfig,
    XDG_CACHE_HOME: dirs.xdgCache,
    XDG_DATA_HOME: dirs.xdgData,
    CEM_HOST_RESULTS: resultsFile,
    // The suite checks every theme only when its screenshots are saved (one theme otherwise).
    ...(screenshotDir ? { CEM_HOST_SCREENSHOTS: '1' } : {}),
    // An empty gallery turns off code-server's queries to open-vsx.org.
    EXTENSIONS_GALLERY: '{}',
  });

  const out = fs.openSync(serverLog, 'a');
  server = spawn(
    nodeForCodeServer(),
    [
      resolveTool('code-server/out/node/entry.js'),
      '--config',
      configFile,
      '--user-data-dir',
      dirs.userData,
      '--extensions-dir',
      dirs.extensions,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      // The built workbench honours the extensionTestsPath payload only with this option.
      '--vscode-option',
      'enable-smoke-test-driver',
      // Without this the server takes the extension host's environment from a login shell, which
      // drops what the caller put on PATH (Node 24, for one).
      '--vscode-option',
      'force-disable-user-env',
      // Safety net if this runner is killed hard and cannot clean up: the server exits once no
      // browser has been connected for a while, and orphaned extension hosts stop waiting soon.
      '--idle-timeout-seconds',
      '120',
      '--reconnection-grace-time',
      '60',
      dirs.workspace,
    ],
    { cwd: tmp, env, detached: true, stdio: ['ignore', out, out] },
  );
  fs.closeSync(out);
  server.exitInfo = undefined;
  server.on('exit', (code, signal) => {
    server.exitInfo = signal ?? `code ${code}`;
  });

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (server.exitInfo) throw new Error(`code-server exited (${server.exitInfo}) while starting`);
    if (Date.now() > deadline) throw new Error('code-server did not answer /healthz within 30 s');
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return port;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
}

// The XDG_* dirs in the temp dir are for code-server itself; the extension host (and whatever
// the extension starts, rootless Podman for one) gets the caller's, or the XDG defaults.
function hostEnvironment() {
  const home = os.homedir();
  return {
    XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME || path.join(home, '.config'),
    XDG_DATA_HOME: process.env.XDG_DATA_HOME || path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: process.env.XDG_CACHE_HOME || path.join(home, '.cache'),
  };
}

async function openWorkbench(port) {
  const mod = await import(pathToFileURL(resolveTool('playwright-core')).href);
  const { chromium } = mod.chromium ? mod : mod.default;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    // Chromium keeps crash reports and dconf state under these; keep them in the temp dir too.
    env: { ...process.env, XDG_CONFIG_HOME: dirs.xdgConfig, XDG_CACHE_HOME: dirs.xdgCache, XDG_DATA_HOME: dirs.xdgData },
    // Our own handlers close the browser and then stop the server; Playwright's would exit first.
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });

  const workbenchOut = fs.createWriteStream(workbenchLog, { flags: 'a' });
  const pageOut = fs.createWriteStream(pageLog, { flags: 'a' });
  const state = { hostExit: undefined };
  // When these hooks exist (VS Code's own web test runner uses them), the workbench sends them
  // its log, which includes the suite's console output, and the extension host's exit code.
  await page.exposeFunction('codeAutomationLog', (type, args) => {
    const line = `[${type}] ${(Array.isArray(args) ? args : [args]).map(String).join(' ')}`;
    workbenchOut.write(`${line}\n`);
    if (!LOG_NOISE.test(line)) {
      recentLog.push(line.split('\n')[0].slice(0, 300));
      if (recentLog.length > 25) recentLog.shift();
    }
    if (opts.verbose) process.stderr.write(`${line}\n`);
  });
  await page.exposeFunction('codeAutomationExit', (code) => {
    state.hostExit = code;
  });
  page.on('console', (msg) => pageOut.write(`[${msg.type()}] ${msg.text()}\n`));
  page.on('pageerror', (err) => pageOut.write(`[pageerror] ${err.stack || err}\n`));

  const remote = (p) => `vscode-remote://127.0.0.1:${port}${p.split(path.sep).map(encodeURIComponent).join('/')}`;
  const payload = [
    ['extensionDevelopmentPath', remote(extensionDir)],
    ['extensionTestsPath', remote(suiteFile)],
    ['extensionEnvironment', JSON.stringify(hostEnvironment())],
    ['skipWelcome', 'true'],
    ['skipReleaseNotes', 'true'],
  ];
  const url =
    `http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}` + `&payload=${encodeURIComponent(JSON.stringify(payload))}`;
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  // Spinners and progress bars stand still: a headless browser draws every step of them in
  // software (its compositor's share of this suite's CPU went from 12 % to 4 %). Nothing else
  // moves less: zero durations for every animation break VS Code's context menus.
  await page.addStyleTag({ content: '.codicon-modifier-spin, .codicon-loading, .progress-bit { animation: none !important; }' });
  return { page, state };
}

async function serveScreenshot(page) {
  const req = readJson(requestFile);
  if (!req) return;
  fs.rmSync(requestFile, { force: true });
  const name = String(req.name ?? '');
  if (!/^[A-Za-z0-9._-]+$/.test(name)) {
    log(`ignoring screenshot request with bad name ${JSON.stringify(name)}`);
    return;
  }
  const saved = await saveScreenshot(page, name);
  fs.writeFileSync(path.join(tmp, `screenshot-done-${name}`), saved);
}

// A name, or folder names and a name, joined by "/": nothing that leaves the screenshot dir.
function screenshotName(name) {
  return /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(name) && !name.split('/').some((part) => part === '.' || part === '..');
}

async function saveScreenshot(page, name, clip) {
  if (!screenshotDir) return '';
  const saved = path.join(screenshotDir, `${name}.png`);
  fs.mkdirSync(path.dirname(saved), { recursive: true });
  await page.screenshot({ path: saved, ...(clip ? { clip } : {}) });
  log(`screenshot ${saved}`);
  return saved;
}

// The first frame (the page, or a webview's nested frame) where the locator finds something.
async function locate(page, step, deadline) {
  for (;;) {
    const frames = step.webview ? page.frames().filter((f) => f !== page.mainFrame()) : [page.mainFrame()];
    for (const frame of frames) {
      let locator = frame.locator(String(step.click ?? step.hover ?? step.fill ?? step.waitFor));
      if (step.text && step.fill === undefined) locator = locator.filter({ hasText: String(step.text) });
      try {
        // Any visible match: an earlier match may sit hidden (a collapsed or scrolled-away item).
        for (const match of await locator.all()) if (await match.isVisible()) return match;
      } catch {
        // a frame that went away while looking
      }
    }
    if (Date.now() > deadline)
      throw new Error(
        `no visible ${step.click ?? step.hover ?? step.fill ?? step.waitFor}${step.text && step.fill === undefined ? ` with text ${JSON.stringify(step.text)}` : ''}${step.webview ? ' in a webview' : ''}`,
      );
    await sleep(100);
  }
}

// Typed keys can reach an input before it has focus (a multi-step quick input between steps):
// the value is set on the element itself, and read back until it holds.
async function fill(locator, text, deadline) {
  await locator.fill(text, { timeout: Math.max(1000, deadline - Date.now()) });
  while ((await locator.inputValue()) !== text) {
    if (Date.now() > deadline) throw new Error(`the input does not hold ${JSON.stringify(text)}`);
    await sleep(100);
  }
}

// The box around the first visible match of each selector, `margin` pixels wider, within the page.
async function clipBox(page, step, deadline) {
  const boxes = [];
  for (const selector of [step.clip].flat()) {
    const box = await (await locate(page, { waitFor: String(selector) }, deadline)).boundingBox();
    if (box) boxes.push(box);
  }
  if (boxes.length === 0) return undefined;
  const margin = Number(step.margin) || 0;
  const size = page.viewportSize();
  const x = Math.max(0, Math.min(...boxes.map((b) => b.x)) - margin);
  const y = Math.max(0, Math.min(...boxes.map((b) => b.y)) - margin);
  const right = Math.min(size.width, Math.max(...boxes.map((b) => b.x + b.width)) + margin);
  const bottom = Math.min(size.height, Math.max(...boxes.map((b) => b.y + b.height)) + margin);
  return { x, y, width: right - x, height: bottom - y };
}

// Whether a webview's page and every box in it fit its width: what scrolls sideways, listed.
async function checkFits(page, step, deadline) {
  const found = await locate(page, { waitFor: step.fits, webview: true }, deadline);
  const wide = await found.evaluate(() => {
    const doc = document.scrollingElement ?? document.documentElement;
    const out = [];
    if (doc.scrollWidth > doc.clientWidth + 1) out.push(`the page: ${doc.scrollWidth} px wide in ${doc.clientWidth} px`);
    for (const el of document.body.querySelectorAll('*')) {
      const overflow = getComputedStyle(el).overflowX;
      if ((overflow === 'auto' || overflow === 'scroll') && el.scrollWidth > el.clientWidth + 1) {
        const name = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.className ? `.${String(el.className).split(' ').join('.')}` : ''}`;
        out.push(`${name}: ${el.scrollWidth} px wide in ${el.clientWidth} px`);
      }
    }
    return { out, width: window.innerWidth };
  });
  if (wide.out.length > 0) throw new Error(`the webview showing ${step.fits} scrolls sideways at ${wide.width} px: ${wide.out.join('; ')}`);
}

// Whether the text S of an element shows whole: the box of its characters lies inside every
// ancestor that clips (overflow hidden: a tree row's label ends in an ellipsis there) and the window.
async function checkShows(page, step, deadline) {
  const found = await locate(page, { waitFor: step.shows, text: step.text }, deadline);
  const cut = await found.evaluate((el, wanted) => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.data.indexOf(wanted);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + wanted.length);
      const text = range.getBoundingClientRect();
      let right = window.innerWidth;
      let by = 'the window';
      for (let box = node.parentElement; box; box = box.parentElement) {
        const style = getComputedStyle(box);
        if (style.overflowX === 'visible') continue;
        const edge = box.getBoundingClientRect().right - parseFloat(style.paddingRight || '0');
        if (edge < right) {
          right = edge;
          by = `${box.tagName.toLowerCase()}.${String(box.className).split(' ').join('.')}`;
        }
      }
      return text.right <= right + 0.5 ? '' : `ends at ${Math.round(text.right)} px, cut at ${Math.round(right)} px by ${by}`;
    }
    return `not one text node holds it (text: ${JSON.stringify(el.textContent)})`;
  }, String(step.text));
  if (cut) throw new Error(`${JSON.stringify(step.text)} in ${step.shows} is not shown whole: ${cut}`);
}

async function serveUi(page) {
  const req = readJson(uiRequestFile);
  if (!req) return;
  fs.rmSync(uiRequestFile, { force: true });
  const id = String(req.id ?? '');
  if (!/^[A-Za-z0-9._-]+$/.test(id)) {
    log(`ignoring ui request with bad id ${JSON.stringify(id)}`);
    return;
  }
  let outcome = { ok: true };
  try {
    // A page the suite opened (a sign-in's browser tab) may be in front: a background tab gets no
    // animation frames, so the workbench would not draw what the steps look for.
    await page.bringToFront();
    for (const step of Array.isArray(req.steps) ? req.steps : []) {
      const deadline = Date.now() + (Number(step.timeoutMs) || 20_000);
      if (step.waitFor !== undefined) await locate(page, step, deadline);
      else if (step.click !== undefined) await (await locate(page, step, deadline)).click();
      else if (step.hover !== undefined) await (await locate(page, step, deadline)).hover();
      else if (step.fill !== undefined) await fill(await locate(page, step, deadline), String(step.text ?? ''), deadline);
      else if (step.type !== undefined) await page.keyboard.type(String(step.type), { delay: 10 });
      else if (step.press !== undefined) await page.keyboard.press(String(step.press));
      else if (step.screenshot !== undefined && screenshotName(String(step.screenshot)))
        await saveScreenshot(page, String(step.screenshot), step.clip ? await clipBox(page, step, deadline) : undefined);
      else if (step.viewport !== undefined)
        await page.setViewportSize({ width: Number(step.viewport.width), height: Number(step.viewport.height) });
      else if (step.fits !== undefined) await checkFits(page, step, deadline);
      else if (step.shows !== undefined) await checkShows(page, step, deadline);
      else if (step.waitMs !== undefined) await sleep(Math.min(Number(step.waitMs) || 0, 10_000));
      else throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
  } catch (err) {
    outcome = { ok: false, error: err.message };
    // What the page looked like, for the failure's reader (kept with --keep).
    const seen = path.join(tmp, `ui-failed-${id}.png`);
    await page.screenshot({ path: seen }).catch(() => {});
    const toasts = await page.evaluate(() => document.querySelector('.notifications-toasts')?.textContent ?? '(no toasts)').catch(() => '');
    log(`ui ${id}: notifications shown: ${String(toasts).slice(0, 500)}`);
    log(`ui ${id} failed: ${err.message} (page: ${seen})`);
  }
  // Whole or not at all: the suite reads it as soon as it exists.
  fs.writeFileSync(path.join(tmp, `ui-done-${id}.part`), JSON.stringify(outcome));
  fs.renameSync(path.join(tmp, `ui-done-${id}.part`), path.join(tmp, `ui-done-${id}`));
}

// Returns the suite's tests, plus a failed "harness: ..." entry when the run went wrong.
async function runSuite() {
  const port = await startServer();
  log(`code-server up on 127.0.0.1:${port}`);
  const { page, state } = await openWorkbench(port);
  log('workbench loaded; waiting for the suite');

  const deadline = Date.now() + timeoutMs;
  let exitSeen;
  for (;;) {
    if (interrupted) return [];
    const results = readJson(resultsFile);
    if (results?.done === true) {
      log(`suite done${state.hostExit !== undefined ? ` (extension host exit code ${state.hostExit})` : ''}`);
      if (results.figures) log(`figures ${JSON.stringify(results.figures)}`);
      return results.tests ?? [];
    }
    await serveScreenshot(page).catch((err) => log(`screenshot failed: ${err.message}`));
    await serveUi(page).catch((err) => log(`ui request failed: ${err.message}`));
    const partial = results?.tests ?? [];
    if (server.exitInfo) return [...partial, harnessFailure(`code-server exited (${server.exitInfo})`)];
    if (state.hostExit !== undefined) {
      // run() settled; allow a moment for a final write before calling it incomplete.
      exitSeen ??= Date.now();
      if (Date.now() - exitSeen > 5000) {
        return [...partial, harnessFailure(`extension host exited (code ${state.hostExit}) before the suite wrote done: true`)];
      }
    }
    if (Date.now() > deadline) return [...partial, harnessFailure(`no complete results within ${opts.timeout} s`)];
    await sleep(POLL_MS);
  }
}

function harnessFailure(error) {
  return { name: 'harness', ok: false, error, harness: true };
}

function report(tests) {
  let passed = 0;
  let failed = 0;
  for (const t of tests) {
    const ms = typeof t.ms === 'number' ? ` (${t.ms} ms)` : '';
    if (t.ok === true) {
      passed++;
      process.stdout.write(`ok      ${t.name}${ms}\n`);
    } else {
      failed++;
      process.stdout.write(`FAILED  ${t.name}${ms}\n`);
      if (t.error) process.stdout.write(`${String(t.error).replace(/^/gm, '        ')}\n`);
    }
  }
  if (tests.length === 0) log('the suite reported no tests');
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  return failed === 0 && passed > 0;
}

let tests;
try {
  tests = await runSuite();
} catch (err) {
  tests = [harnessFailure(err.stack || String(err))];
}
if (interrupted) {
  // The signal handler reports nothing, cleans up and exits.
  await cleanup();
  process.exit(130);
}
const success = report(tests);
if (tests.some((t) => t.harness)) {
  // The temp dir goes away below unless --keep, so show the likeliest clues now.
  const serverTail = tail(serverLog, 15);
  if (serverTail) process.stderr.write(`--- code-server log, last lines ---\n${serverTail}\n`);
  if (recentLog.length) {
    process.stderr.write(`--- workbench log (with the suite's console output), last entries ---\n${recentLog.join('\n')}\n`);
  }
  if (!opts.keep) process.stderr.write('(--keep keeps the full logs: code-server.log, workbench.log, page-console.log, user-data/logs/)\n');
}
await cleanup();
log(`finished in ${since()}`);
process.exit(success ? 0 : 1);
