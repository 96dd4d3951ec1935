import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { kernelSource, PORTABLE_KERNEL_FILES } from '../../src/sandbox/container/kernel/source.ts';

test('the kernel parses as Python 3.9', () => {
  // ast.parse with feature_version rejects syntax newer than 3.9 (match, except*, X | Y in defs...).
  const check = 'import ast, sys; ast.parse(sys.stdin.read(), feature_version=(3, 9)); print("ok")';
  assert.equal(execFileSync('python3', ['-c', check], { input: kernelSource() }).toString().trim(), 'ok');
});

test('the kernel fits in one exec argument (a restart passes it on the command line)', () => {
  // Linux's MAX_ARG_STRLEN is 128 KiB per argument; keep a margin.
  assert.ok(kernelSource().length < 120 * 1024, `${kernelSource().length} bytes`);
});

// The portable files alone, in a plain python3: loading them must leave the process as it was,
// and their helpers must work without the rest of the kernel (another kernel reuses them).
function portable(driver: string[]): unknown {
  const source = PORTABLE_KERNEL_FILES.map((name) =>
    readFileSync(new URL(`../../src/sandbox/container/kernel/${name}`, import.meta.url), 'utf8'),
  ).join('\n');
  const script = [
    'import json, os, signal, sys, threading, warnings',
    'def snapshot():',
    '    return [threading.active_count(), sorted(os.listdir("/proc/self/fd")), signal.getsignal(signal.SIGINT), sys.stdout, sys.stderr,',
    '            sys.stdin, list(sys.meta_path), dict(os.environ), warnings.showwarning, "sandbox_host" in sys.modules]',
    'before = snapshot()',
    'k = {"__name__": "kernel"}',
    'exec(compile(sys.stdin.read(), "<kernel>", "exec"), k)',
    'out = {"unchanged": snapshot() == before}',
    ...driver,
    'print(json.dumps(out))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', script], { input: source, encoding: 'utf8' }));
}

test('the portable kernel files load on their own and change nothing at import', () => {
  assert.deepEqual(portable([]), { unchanged: true });
});

test("the portable kernel files alone make a run's error, traceback and value text", () => {
  const out = portable([
    'body, expr = k["_compile"]("x = 6\\nx * 7", "<run-1>")',
    'ns = {}',
    'eval(body, ns)',
    'out["value"] = k["_value_text"](eval(expr, ns))',
    'body, expr = k["_compile"]("def f():\\n    return 1 / 0\\nf()", "<run-2>")',
    'eval(body, ns)',
    'try:',
    '    eval(expr, ns)',
    'except ZeroDivisionError as e:',
    '    out["error"] = k["_error_of"](e)',
    'try:',
    '    import a_module_that_is_not_there',
    'except ModuleNotFoundError as e:',
    '    out["module"] = k["_error_of"](e)["message"]',
    'out["told"] = k["_module_hint_text"]("scipy", "Installed besides the standard library: numpy and 3 more.", True, "Reach out.")',
    'out["network"] = k["_module_hint_text"]("requests", "Only the Python standard library is installed.", True, "Reach out.")',
    'out["yaml"] = k["_module_hint_text"]("yaml", "X.", False)',
    'try:',
    '    k["_compile"]("x = [" + "1, " * 5000 + ")", "<run-3>")',
    'except SyntaxError as e:',
    '    out["syntax"] = k["_error_of"](e)["traceback"]',
    'async def g(): pass',
    'class Bad:',
    '    def __repr__(self): raise ValueError("no")',
    'out["coroutine"] = k["_value_text"](g())',
    'out["bad"] = k["_value_text"](Bad())',
    'out["cut"] = k["_cut"]("a" * 50 + "b" * 50, 20)',
  ]) as Record<string, unknown>;
  assert.equal(out.unchanged, true);
  assert.equal(out.value, '42');
  assert.deepEqual(Object.keys(out.error as object), ['type', 'message', 'traceback']);
  const error = out.error as { type: string; message: string; traceback: string };
  assert.equal(error.type, 'ZeroDivisionError');
  assert.equal(error.message, 'division by zero');
  assert.match(error.traceback, /File "<run-2>", line 3, in <module>\n.*File "<run-2>", line 2, in f\n/s);
  assert.ok(error.traceback.endsWith('ZeroDivisionError: division by zero\n'), error.traceback);
  assert.match(out.module as string, /^No module named 'a_module_that_is_not_there'\n.*sandbox\.packages/s);
  // The bridge's sentence of what is installed, whether sandbox.packages can add the module, and
  // for a network library that there is no network, with where it is instead.
  assert.equal(
    out.told,
    'Installed besides the standard library: numpy and 3 more. pip is not available (no network); the user can add scipy with the setting sandbox.packages (built into the sandbox image). Instead of scipy use math or statistics.',
  );
  assert.match(
    out.network as string,
    /the user can add requests with the setting sandbox\.packages .*\. The sandbox has no network \(by design\): do not retry\. Reach out\.$/,
  );
  assert.equal(out.yaml, 'X. Packages need the container sandbox (sandbox.packages). Instead of yaml use json.');
  const syntax = out.syntax as string;
  assert.match(syntax, /\n {2}File "<run-3>", line 1\n {4}\.\.\.1, 1, .*\nSyntaxError: /s, syntax);
  assert.ok(syntax.length < 1000, `${syntax.length} characters`);
  assert.equal(out.coroutine, '<coroutine g(), not awaited: write result = await g(...)>');
  assert.equal(out.bad, '<repr() failed: ValueError>');
  assert.equal(out.cut, `${'a'.repeat(10)}\n... [80 characters cut] ...\n${'b'.repeat(10)}`);
});

test('the portable kernel files alone pick plot dpis, send the files left in the out folder and list distributions', () => {
  const out = portable([
    'import tempfile',
    'out["dpi"] = [k["_plot_dpi"](6.4, 4.8, 100), k["_plot_dpi"](32, 8, 100), k["_plot_dpi"](6.4, 4.8, None)]',
    'out["figures"] = k["emit_figures"]()  # matplotlib not imported: nothing to emit',
    'k["_install_plots"]()',
    'out["hooks"] = [f.__name__ for f in (sys.meta_path[0], sys.meta_path[-1])]',
    'sent = []',
    'k["_send"] = sent.append',
    'with tempfile.TemporaryDirectory() as folder:',
    '    k["_OUT_DIR"] = folder',
    '    os.makedirs(os.path.join(folder, "sub"))',
    '    open(os.path.join(folder, "sub", "a.txt"), "w").write("hi")',
    '    open(os.path.join(folder, "big.bin"), "wb").write(b"x" * (k["_MAX_OUT_FILE_BYTES"] + 1))',
    '    k["_collect_out"]("r1")',
    '    out["files"] = sent',
    '    out["emptied"] = os.listdir(folder)',
    'with tempfile.TemporaryDirectory() as folder:',
    '    for name in ("zope.interface-5.0.dist-info", "lz4-4.0.2+dfsg.egg-info", "Abc.egg-info", "x" * 101 + "-1.dist-info", "other"):',
    '        os.mkdir(os.path.join(folder, name))',
    '    k["_CWD"] = "/nowhere"',
    '    out["dists"] = k["_image_distributions"]([folder])',
  ]) as Record<string, unknown>;
  assert.equal(out.unchanged, true);
  assert.deepEqual(out.dpi, [100, 50, 100]);
  assert.equal(out.figures, 0);
  assert.deepEqual(out.hooks, ['_MatplotlibHook', '_PlotsBackendFinder']);
  assert.deepEqual(out.files, [
    { t: 'file', run: 'r1', path: 'big.bin', bytes: 4 * 1024 * 1024 + 1, skipped: 'size' },
    { t: 'file', run: 'r1', path: 'sub/a.txt', bytes: 2, data: 'aGk=' },
  ]);
  assert.deepEqual(out.emptied, []);
  assert.deepEqual(out.dists, [['Abc', 'lz4', 'zope.interface'], 1]);
});

test("with the sandbox's proxy, import hints say how pip installs into the session (only with the index listed and pip there) and network errors say the proxy is the way", () => {
  const out = portable([
    'import importlib.util',
    'k["_NETWORK"]["proxy"] = True',
    'out["proxy"] = k["_module_hint_text"]("requests", "X.", True, "Reach out.")',
    'out["error"] = k["_common_hint"](OSError(101, "Network is unreachable"))',
    'k["_NETWORK"]["pip"] = ""',
    'out["pip"] = importlib.util.find_spec("pip") is not None',
    'out["pypi"] = k["_module_hint_text"]("requests", "X.", True)',
    'k["_NETWORK"]["pip"] = "https://pypi.example.com/simple"',
    'out["index"] = k["_module_hint_text"]("yaml", "X.", True)',
    'out["wasm"] = k["_module_hint_text"]("yaml", "X.", False)',
  ]) as Record<string, unknown>;
  assert.equal(
    out.proxy,
    'X. pip is not available (no network); the user can add requests with the setting sandbox.packages (built into the sandbox image).',
  );
  assert.deepEqual(out.error, [
    'network',
    'The sandbox reaches the network only through its proxy (HTTP_PROXY, HTTPS_PROXY), to the hosts sandbox.network allows: do not retry a direct connection.',
  ]);
  if (!out.pip) return; // this machine's python3 has no pip: the hints above are what it gets
  assert.equal(
    out.pypi,
    'X. To use it in this session: python3 -m pip install --target /tmp/pkgs requests (a subprocess), then sys.path.insert(0, "/tmp/pkgs"); to keep it, the user can add it with the setting sandbox.packages.',
  );
  assert.match(out.index as string, /python3 -m pip install --target \/tmp\/pkgs --index-url https:\/\/pypi\.example\.com\/simple yaml /);
  assert.equal(out.wasm, 'X. Packages need the container sandbox (sandbox.packages). Instead of yaml use json.');
});

test('after a failed import, the submodules it left are forgotten and the package imports whole again', () => {
  // A package whose __init__ uses a submodule by the name its import bound, as asyncio's does,
  // and whose second submodule fails the first time (as a timeout's interrupt would).
  const driver = (forget: boolean) => [
    'import tempfile',
    'root = tempfile.mkdtemp()',
    'os.mkdir(os.path.join(root, "pkg"))',
    'open(os.path.join(root, "pkg", "__init__.py"), "w").write("from .first import *\\nfrom .second import *\\nNAMES = first.NAMES")',
    'open(os.path.join(root, "pkg", "first.py"), "w").write("NAMES = [1]")',
    'open(os.path.join(root, "pkg", "second.py"), "w").write("raise KeyboardInterrupt")',
    'sys.path.insert(0, root)',
    'try:',
    '    import pkg',
    'except KeyboardInterrupt:',
    '    pass',
    'out["left"] = sorted(n for n in sys.modules if n.startswith("pkg"))',
    `out["forgotten"] = k["_forget_orphan_modules"]() if ${forget ? 'True' : 'False'} else []`,
    'out["json kept"] = "json.decoder" in sys.modules',
    'open(os.path.join(root, "pkg", "second.py"), "w").write("OK = True")',
    'try:',
    '    import pkg',
    '    out["again"] = pkg.NAMES',
    'except NameError as e:',
    '    out["again"] = str(e)',
  ];
  const forgotten = portable(driver(true)) as Record<string, unknown>;
  assert.deepEqual(forgotten.left, ['pkg.first']);
  assert.deepEqual(forgotten.forgotten, ['pkg.first']);
  assert.equal(forgotten['json kept'], true);
  assert.deepEqual(forgotten.again, [1]);
  // Without it, the package fails on its own name for the rest of the process.
  assert.equal((portable(driver(false)) as Record<string, unknown>).again, "name 'first' is not defined");
});
