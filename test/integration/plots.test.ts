// matplotlib figures come back as PNG images, through the real bridge, on real Podman and real
// Docker with an image that has Debian's matplotlib: plt.show() and figures left open both
// return images (then closed), no plot means no image, and many figures meet the image limits
// of a result with the cut said.
import assert from 'node:assert/strict';
import { after, before, describe, test as nodeTest } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startBridge, structured, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_DATA_IMAGE, testRuntimes } from '../helpers/env.ts';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The PNG images of a result: bytes, width and height (from the IHDR chunk). */
function pngs(result: CallToolResult): Array<{ bytes: number; width: number; height: number }> {
  return result.content.flatMap((c) => {
    if (c.type !== 'image') return [];
    assert.equal(c.mimeType, 'image/png');
    const data = Buffer.from(c.data, 'base64');
    assert.deepEqual(data.subarray(0, 8), PNG_SIGNATURE, 'a PNG signature');
    assert.equal(data.subarray(12, 16).toString('latin1'), 'IHDR');
    return [{ bytes: data.length, width: data.readUInt32BE(16), height: data.readUInt32BE(20) }];
  });
}

const LINE_PLOT = [
  'import matplotlib.pyplot as plt',
  'plt.plot([1, 3, 2, 5, 4], label="series")',
  'plt.title("A line plot")',
  'plt.legend()',
].join('\n');

// What a plot becomes is the kernel's work, the same on every engine: the first runtime runs every
// case, the others the smoke case (a figure comes back as an image through their channel).
const SMOKE = new Set(['plt.show() returns the figure as a small PNG and closes it']);

for (const [order, runtime] of testRuntimes().entries()) {
  const test = (name: string, fn: () => Promise<void>): void => {
    if (order === 0 || SMOKE.has(name)) void nodeTest(name, fn);
    else void nodeTest.skip(`${name} (on ${testRuntimes()[0]} only)`, fn);
  };
  describe(`plots on ${runtime}`, () => {
    let bridge: BridgeHandle;
    before(async () => {
      bridge = await startBridge({
        sandbox: { runtime, image: TEST_DATA_IMAGE, memory: '512m', timeoutSeconds: 60, maxTimeoutSeconds: 120 },
      });
    });
    after(async () => {
      await bridge?.close();
    });

    test('plt.show() returns the figure as a small PNG and closes it', async () => {
      const result = await bridge.call(`${LINE_PLOT}\nplt.show()\nlen(plt.get_fignums())`);
      assert.equal(structured(result).status, 'ok', textOf(result));
      assert.equal(structured(result).value, '0', 'the figure is closed once shown');
      const images = pngs(result);
      assert.equal(images.length, 1);
      // matplotlib's default figure, 6.4 x 4.8 inches at 100 dpi.
      assert.deepEqual([images[0]!.width, images[0]!.height], [640, 480]);
      assert.ok(images[0]!.bytes < 60_000, `a line plot of ${images[0]!.bytes} bytes`);
      process.stdout.write(`# ${runtime}: a line plot is ${images[0]!.bytes} bytes\n`);
    });

    test('figures left open at the end of a run come back, once, and are closed', async () => {
      const result = await bridge.call(
        `${LINE_PLOT}\nplt.figure(figsize=(40, 10))\nplt.plot([0, 1])\nmatplotlib_backend = plt.get_backend()`,
      );
      assert.equal(structured(result).status, 'ok', textOf(result));
      const images = pngs(result);
      assert.equal(images.length, 2);
      assert.deepEqual([images[0]!.width, images[0]!.height], [640, 480]);
      // A huge figure is rendered at a lower dpi: its longest side is capped.
      assert.deepEqual([images[1]!.width, images[1]!.height], [1600, 400]);
      const next = await bridge.call('len(plt.get_fignums()), matplotlib_backend');
      assert.equal(structured(next).value, "(0, 'module://_sandbox_plots')");
      assert.equal(pngs(next).length, 0, 'a figure comes back once');
    });

    test('a run that fails still returns what it drew', async () => {
      const result = await bridge.call(`${LINE_PLOT}\n1 / 0`);
      assert.equal(structured(result).status, 'error');
      assert.equal(pngs(result).length, 1);
      assert.equal(structured(await bridge.call('len(plt.get_fignums())')).value, '0');
    });

    test('an interrupted run sends no figure and leaves none open', async () => {
      const stopped = await bridge.call(`${LINE_PLOT}\nimport time\nwhile True:\n    time.sleep(0.05)`, { timeout: 3 });
      assert.equal(structured(stopped).status, 'timeout');
      assert.equal(pngs(stopped).length, 0);
      const next = await bridge.call('len(plt.get_fignums())');
      assert.equal(structured(next).value, '0');
      assert.equal(pngs(next).length, 0);
    });

    test('no plot, no image', async () => {
      const imported = await bridge.call('import matplotlib.pyplot as plt\nimport matplotlib\nmatplotlib.__version__ > "3"');
      assert.equal(structured(imported).value, 'True');
      assert.equal(pngs(imported).length, 0);
      const shownEmpty = await bridge.call('plt.show()');
      assert.equal(pngs(shownEmpty).length, 0);
      const plain = await bridge.call('sum(range(10))');
      assert.equal(pngs(plain).length, 0);
    });

    test('a figure saved to a file under another backend is not sent as well', async () => {
      const result = await bridge.call(
        'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig("/work/plot.png")\nlen(plt.get_fignums())',
        { session: 'agg' },
      );
      assert.equal(structured(result).value, '1');
      assert.equal(pngs(result).length, 0);
    });

    test("a child process's matplotlib keeps its own backend and works", async () => {
      const code = [
        'import subprocess, sys',
        'child = "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.savefig(\'/work/child.png\'); print(plt.get_backend())"',
        'done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)',
        'done.returncode, done.stdout.strip().lower(), done.stderr[-300:]',
      ].join('\n');
      const result = await bridge.call(code);
      assert.match(String(structured(result).value), /^\(0, 'agg', /);
      assert.equal(pngs(result).length, 0);
    });

    test("a child given the kernel's whole environment (env={**os.environ}) draws with plain Agg", async () => {
      const code = [
        'import os, subprocess, sys',
        'import matplotlib.pyplot as plt',
        'parent = plt.get_backend()',
        'child = "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.savefig(\'/work/child-env.png\'); print(plt.get_backend())"',
        'done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env={**os.environ})',
        'parent, done.returncode, done.stdout.strip().lower(), done.stderr[-300:], os.path.getsize("/work/child-env.png") > 0',
      ].join('\n');
      const result = await bridge.call(code, { session: 'child-env' });
      assert.equal(structured(result).status, 'ok', textOf(result));
      assert.match(String(structured(result).value), /^\('module:\/\/_sandbox_plots', 0, 'agg', '', True\)$/);
      assert.equal(pngs(result).length, 0, 'the child drew no figure of the kernel');
    });

    test('a backend the code names in MPLBACKEND before the import is its choice', async () => {
      const result = await bridge.call(
        'import os\nos.environ["MPLBACKEND"] = "svg"\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.get_backend()',
        { session: 'own-backend' },
      );
      assert.equal(structured(result).value, "'svg'");
      assert.equal(pngs(result).length, 0);
    });

    test('many figures meet the per-run image limit, the cut said', async () => {
      const result = await bridge.call(
        'import matplotlib.pyplot as plt\nfor i in range(20):\n    plt.figure()\n    plt.plot([0, i])\nplt.show()',
      );
      assert.equal(structured(result).status, 'ok', textOf(result));
      assert.equal(pngs(result).length, 16);
      assert.match(textOf(result), /4 images not kept: at most 16 per run/);
      assert.equal(structured(result).truncated, true);
    });

    test('big figures meet the image budget of a result, the cut said', async () => {
      // Noise does not compress: each figure is about 1.1 MB, and a result carries 4 MB of images.
      const result = await bridge.call(
        'import numpy as np\nimport matplotlib.pyplot as plt\nfor i in range(5):\n    plt.figure(figsize=(8, 8))\n    plt.imshow(np.random.default_rng(i).random((800, 800)))\nplt.show()',
      );
      assert.equal(structured(result).status, 'ok', textOf(result));
      const images = pngs(result);
      assert.ok(images.length >= 2 && images.length < 5, `${images.length} images attached`);
      assert.match(textOf(result), new RegExp(`${5 - images.length} images? not attached: over the 4 MiB image budget of a result`));
    });
  });
}
