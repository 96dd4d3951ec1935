// A PEP 503 "simple" package index on 127.0.0.1 serving small pure-Python wheels made here: a
// wheel is a zip of the package, its METADATA, WHEEL and RECORD. Counts the requests it gets.
import { createHash } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';

/** A zip archive with stored (uncompressed) entries: enough for a wheel. */
export function zip(files: Record<string, string>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const data = Buffer.from(text, 'utf8');
    const nameBytes = Buffer.from(name, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0, 6);
    local.writeUInt16LE(0, 8);
    local.writeUInt32LE(0, 10);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE((0o100644 * 0x10000) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const centralBytes = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  const count = Object.keys(files).length;
  end.writeUInt16LE(count, 8);
  end.writeUInt16LE(count, 10);
  end.writeUInt32LE(centralBytes.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, centralBytes, end]);
}

function recordHash(text: string): string {
  return `sha256=${createHash('sha256').update(text).digest('base64url')}`;
}

/** A pure-Python wheel of package `name` whose module has `VALUE = value`. */
export function makeWheel(name: string, version: string, value: string): { file: string; bytes: Buffer } {
  const module = name.replace(/-/g, '_');
  const info = `${module}-${version}.dist-info`;
  const files: Record<string, string> = {
    [`${module}/__init__.py`]: `VALUE = ${JSON.stringify(value)}\n`,
    [`${info}/METADATA`]: `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\nSummary: test package\n`,
    [`${info}/WHEEL`]: 'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
  };
  const record = Object.entries(files).map(([path, text]) => `${path},${recordHash(text)},${Buffer.byteLength(text)}`);
  files[`${info}/RECORD`] = `${record.join('\n')}\n${info}/RECORD,,\n`;
  return { file: `${module}-${version}-py3-none-any.whl`, bytes: zip(files) };
}

export interface PipIndex {
  url: string;
  requests: string[];
  /** Answers the stalled pages held so far, and every later one, as any other page. */
  release(): void;
  close(): Promise<void>;
}

/** Serves /simple/ and /simple/<name>/ (PEP 503) and the wheels, on 127.0.0.1; the pages of `stall` wait for release(). */
export async function servePipIndex(
  packages: Record<string, { version: string; value: string }>,
  stall: readonly string[] = [],
): Promise<PipIndex> {
  const wheels = new Map<string, { project: string; file: string; bytes: Buffer }>();
  for (const [name, { version, value }] of Object.entries(packages)) {
    const wheel = makeWheel(name, version, value);
    wheels.set(wheel.file, { project: name, ...wheel });
  }
  const requests: string[] = [];
  const held: Array<() => void> = [];
  let released = false;
  const serve = (path: string, simple: RegExpExecArray | null, res: ServerResponse) => {
    if (path === '/simple/' || path === '/simple') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(
        `<html><body>${Object.keys(packages)
          .map((p) => `<a href="/simple/${p}/">${p}</a>`)
          .join('\n')}</body></html>`,
      );
    }
    if (simple) {
      const project = simple[1]!.toLowerCase().replace(/[-_.]+/g, '-');
      const files = [...wheels.values()].filter((w) => w.project === project);
      if (files.length === 0) {
        res.writeHead(404);
        return res.end('not found');
      }
      res.writeHead(200, { 'content-type': 'text/html' });
      const links = files.map(
        (w) => `<a href="/files/${w.file}#sha256=${createHash('sha256').update(w.bytes).digest('hex')}">${w.file}</a>`,
      );
      return res.end(`<html><body>${links.join('\n')}</body></html>`);
    }
    const file = /^\/files\/([^/]+)$/.exec(path)?.[1];
    const wheel = file ? wheels.get(file) : undefined;
    if (wheel) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': wheel.bytes.length });
      return res.end(wheel.bytes);
    }
    res.writeHead(404);
    res.end('not found');
  };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    requests.push(path);
    const simple = /^\/simple\/([^/]+)\/?$/.exec(path);
    if (simple && !released && stall.includes(simple[1]!)) return void held.push(() => serve(path, simple, res)); // until release()
    serve(path, simple, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/simple/`,
    requests,
    release: () => {
      released = true;
      for (const answer of held.splice(0)) answer();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
