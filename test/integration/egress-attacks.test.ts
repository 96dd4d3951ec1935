// The sandbox's network (sandbox.network) against code that tries to get further than it is
// allowed, through the real bridge, real containers on both runtimes and the real proxy. On the
// host, on loopback: an allowed server (listed exactly as 127.0.0.1:PORT) and a secret one (not
// listed); every way of reaching the secret one from inside the sandbox is tried, and the secret
// server must see no request at all. Also: the allowed one is reached with urllib as-is, the
// container still has no interface but lo, the per-run request cap holds under concurrency, and
// every request is a line of the run log under its run.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseRunLog } from '../../src/state/run-log/reader.ts';
import { RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { startBridge, structured, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

interface Loopback {
  server: Server;
  port: number;
  seen: string[];
}

async function loopbackServer(name: string): Promise<Loopback> {
  const seen: string[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    seen.push(`${request.method ?? ''} ${request.url ?? ''} host=${request.headers.host ?? ''}`);
    response.end(`hello from ${name}`);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, seen };
}

/** Runs `code` and returns its stdout, failing with the whole result when the run did not end ok. */
async function stdout(bridge: BridgeHandle, code: string): Promise<string> {
  const result = await bridge.call(code);
  assert.equal(structured(result).status, 'ok', textOf(result));
  return String(structured(result).stdout ?? '');
}

/** Python: what a GET of `url` through the sandbox's proxy settings gave ("200 body" or "refused 403 reason"). */
const GET = `
import urllib.request, urllib.error
def get(url, headers=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as r:
            return '%d %s' % (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return 'refused %d %s' % (e.code, e.read().decode()[:300])
    except Exception as e:
        return 'error %s: %s' % (type(e).__name__, e)
`;

/** Python: a CONNECT written straight to the proxy's socket, where the container has it mounted. */
const RAW_CONNECT = (target: string) => `
import socket
s = socket.socket(socket.AF_UNIX)
s.connect('/run/cem-net/egress.sock')
s.sendall(b'CONNECT ${target} HTTP/1.1\\r\\nHost: ${target}\\r\\n\\r\\n')
print(s.recv(200).split(b'\\r\\n')[0].decode())
`;

for (const runtime of testRuntimes()) {
  describe(`the sandbox's network against escape attempts (${runtime})`, () => {
    let allowed: Loopback;
    let secret: Loopback;
    let bridge: BridgeHandle;

    before(async () => {
      allowed = await loopbackServer('allowed');
      secret = await loopbackServer('secret');
      bridge = await startBridge({
        sandbox: {
          runtime,
          image: TEST_IMAGE,
          prewarm: false,
          network: { allow: [`127.0.0.1:${allowed.port}`], maxRequestsPerRun: 8 },
        },
      });
    });
    after(async () => {
      await bridge.close();
      allowed.server.close();
      secret.server.close();
    });

    test('a host listed exactly is reached with urllib as it is; the container has no interface but lo', async () => {
      const out = await stdout(
        bridge,
        `${GET}\nimport os\nprint(get('http://127.0.0.1:${allowed.port}/hi'))\nprint(sorted(os.listdir('/sys/class/net')))`,
      );
      assert.match(out, /^200 hello from allowed$/m);
      assert.match(out, /^\['lo'\]$/m);
      const summary = await stdout(bridge, 'from mcp import runtime\nprint(runtime.capability_summary())');
      assert.match(summary, /Network: HTTP and HTTPS only through the bridge's proxy/);
      assert.ok(
        allowed.seen.some((line) => line.startsWith('GET /hi ')),
        allowed.seen.join('\n'),
      );
    });

    test('every way to the secret loopback server is refused, and it sees nothing', async () => {
      const p = secret.port;
      const a = allowed.port;
      const out = await stdout(
        bridge,
        [
          GET,
          `print('port', get('http://127.0.0.1:${p}/'))`,
          `print('name', get('http://localhost:${a}/'))`,
          `print('mapped', get('http://[::ffff:127.0.0.1]:${p}/'))`,
          `print('decimal', get('http://2130706433:${p}/'))`,
          `print('zero', get('http://0.0.0.0:${p}/'))`,
          `print('hostheader', get('http://127.0.0.1:${a}/smuggle', {'Host': '127.0.0.1:${p}'}))`,
        ].join('\n'),
      );
      for (const label of ['port', 'name', 'mapped', 'decimal', 'zero']) {
        assert.match(out, new RegExp(`^${label} (refused 403|error)`, 'm'), out);
      }
      assert.match(out, /^hostheader 200 hello from allowed$/m, out);
      assert.deepEqual(secret.seen, [], 'the secret server was reached');
    });

    test('a CONNECT written straight to the proxy socket is checked as any other', async () => {
      const out = await stdout(bridge, RAW_CONNECT(`127.0.0.1:${secret.port}`));
      assert.match(out, /^HTTP\/1\.1 403/m, out);
      assert.deepEqual(secret.seen, []);
    });

    test('sockets of its own reach nothing: no route off the container', async () => {
      const out = await stdout(
        bridge,
        `import socket\ntry:\n    socket.create_connection(('192.0.2.1', 80), timeout=5)\n    print('connected')\nexcept OSError as e:\n    print('failed', e.errno)`,
      );
      assert.match(out, /^failed \d+$/m, out);
    });

    test('the per-run request cap holds for requests made at once', async () => {
      const before = allowed.seen.length;
      const out = await stdout(
        bridge,
        `${GET}\nfrom concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(12) as pool:\n    answers = list(pool.map(lambda i: get('http://127.0.0.1:${allowed.port}/n%d' % i), range(12)))\nprint(sum(a.startswith('200') for a in answers), sum(a.startswith('refused 403') for a in answers))`,
      );
      assert.match(out, /^8 4$/m, out);
      assert.equal(allowed.seen.length - before, 8);
    });

    test('each request is a line of the run log under its run, with its decision', async () => {
      const runs = parseRunLog(readFileSync(join(bridge.stateDir, RUN_LOG_FILE), 'utf8'));
      const requests = runs.flatMap((run) => run.egress.map((request) => ({ run: run.id, ...request })));
      const secretOnes = requests.filter((r) => r.port === secret.port);
      assert.ok(secretOnes.length >= 4, JSON.stringify(requests));
      assert.ok(
        secretOnes.every((r) => r.decision === 'private'),
        JSON.stringify(secretOnes),
      );
      const decisions = new Set(requests.map((r) => r.decision));
      for (const decision of ['allowed', 'private', 'refused', 'capped']) assert.ok(decisions.has(decision), [...decisions].join());
      assert.ok(
        requests.every((r) => r.run !== undefined && r.run !== ''),
        'every request belongs to a run',
      );
    });
  });
}
