// The agent-task suite: fourteen kinds of task an agent does with run_python, each
// scripted as the Python a competent agent writes, mistakes included where agents make them.
// The script reads what it gets back, as an agent would, and takes another turn only when what
// it read did not tell it enough (a help() that hides a parameter's fields, an error that does
// not name the fix): so the number of run_python calls measures what the bridge tells the model.
// Its decisions read the text content (what most clients show the model); every call records
// both forms the model can be handed, the text and the JSON of structuredContent (what VS Code
// hands it), and the token meter the run log recorded for it, when the bridge keeps one. Used by
// test/integration/agent-tasks.test.ts (assertions) and bench/agent-tasks.ts (figures).
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { parseRunLog, type RunRecord, type ToolCallRecord } from '../../src/state/run-log/reader.ts';
import { FILESYSTEM_SERVER, FIXTURE, MEMORY_SERVER, startBridge, tempDir, type BridgeHandle } from './bridge.ts';
import { TEST_DATA_IMAGE } from './env.ts';

export const SCREENSHOT_SERVER = fileURLToPath(new URL('./screenshot-server.ts', import.meta.url));

/** The issue's budget: output characters the model gets per run, in any one form, by default. */
export const OUTPUT_BUDGET = 20_000;
/** What a form may hold in all: the budget plus room for notes, JSON escaping and the other fields. */
export const FORM_LIMIT = 22_000;

export interface ImagePart {
  mime: string;
  data: string;
}

export interface CallRecord {
  task: number;
  label: string;
  code: string;
  args: Record<string, unknown>;
  result: CallToolResult;
  status: string;
  /** The text parts, joined: what most clients hand the model. */
  text: string;
  /** The JSON of structuredContent (the text when there is none): what VS Code hands the model. */
  structuredJson: string;
  images: ImagePart[];
  /** Bytes of the whole result as JSON, images included (the MCP client's read limit is 10 MiB). */
  resultBytes: number;
  seconds: number;
  /** The run log's token meter of this run (docs/run-log.md), when the bridge records one. */
  meter?: RunMeterFigures;
  /** The proxied calls the run log recorded for this run (`time` is when each ended). */
  toolCalls: ToolCallRecord[];
}

/** The run log's `meter` of a run, as far as the bench reads it. */
export interface RunMeterFigures {
  modelChars: number;
  modelTokens: number;
  toolResultBytes: number;
  keptBytes: number;
  toolsUsed: number;
  listingTokens: number;
}

/** The last run the bridge logged, read by the product's own reader: runs are one at a time, so the call just made. */
async function lastRun(stateDir: string): Promise<RunRecord | undefined> {
  const log = await readFile(join(stateDir, 'runs.jsonl'), 'utf8').catch(() => '');
  return parseRunLog(log).at(-1);
}

/** A conversation: every run_python call of one task, in order. */
export class Agent {
  readonly calls: CallRecord[] = [];
  readonly task: number;
  /** Why the task did not run here (the image it needs is missing). */
  skipped?: string;
  private readonly bridge: BridgeHandle;
  private readonly session: string | undefined;

  constructor(task: number, bridge: BridgeHandle, session?: string) {
    this.task = task;
    this.bridge = bridge;
    this.session = session;
  }

  async run(label: string, code: string, extra: Record<string, unknown> = {}): Promise<CallRecord> {
    const args = { ...(this.session ? { session: this.session } : {}), ...extra };
    const started = performance.now();
    const result = await this.bridge.call(code, args);
    const seconds = (performance.now() - started) / 1000;
    const logged = await lastRun(this.bridge.stateDir);
    const text = result.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n');
    const images = result.content.flatMap((c) => (c.type === 'image' ? [{ mime: c.mimeType, data: c.data }] : []));
    const structured = result.structuredContent;
    const record: CallRecord = {
      task: this.task,
      label,
      code,
      args,
      result,
      status: typeof structured?.status === 'string' ? structured.status : result.isError ? 'error' : 'ok',
      text,
      structuredJson: structured ? JSON.stringify(structured) : text,
      images,
      resultBytes: Buffer.byteLength(JSON.stringify(result)),
      seconds,
      toolCalls: logged?.toolCalls ?? [],
    };
    if (logged?.meter) {
      const { tokenizer: _tokenizer, ...meter } = logged.meter;
      record.meter = meter;
    }
    this.calls.push(record);
    return record;
  }

  /** The call with this label (the last one, when the agent made it more than once). */
  call(label: string): CallRecord {
    const found = this.calls.findLast((c) => c.label === label);
    if (!found) throw new Error(`task ${this.task}: no call labelled "${label}" (calls: ${this.calls.map((c) => c.label).join(', ')})`);
    return found;
  }

  has(label: string): boolean {
    return this.calls.some((c) => c.label === label);
  }
}

// ---- reading what the model got ---------------------------------------------------------------

/** Every string inside a value, recursively. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value && typeof value === 'object') return Object.values(value).flatMap(stringsOf);
  return [];
}

/** Drops lines that only echo the code (a traceback's source lines), so a check finds what the bridge said. */
function withoutCode(text: string, code: string): string {
  const codeLines = new Set(
    code
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean),
  );
  return text
    .split('\n')
    .filter((line) => !codeLines.has(line.trim()))
    .join('\n');
}

/** What the model reads in each form, minus echoes of its own code. */
export function said(record: CallRecord): { text: string; structured: string } {
  const structured = record.result.structuredContent;
  return {
    text: withoutCode(record.text, record.code),
    structured: withoutCode(structured ? stringsOf(structured).join('\n') : record.text, record.code),
  };
}

/** Which forms say what `pattern` looks for (beyond echoing the code). */
export function saysIn(record: CallRecord, pattern: RegExp): { text: boolean; structured: boolean } {
  const forms = said(record);
  return { text: pattern.test(forms.text), structured: pattern.test(forms.structured) };
}

/** Base64 image data where the model reads text: a known image's data, a PNG's or JPEG's base64 magic, or a long base64 run. */
export function base64In(record: CallRecord, known: readonly ImagePart[] = []): string[] {
  const found: string[] = [];
  const forms = { text: record.text, structured: record.structuredJson };
  for (const [form, content] of Object.entries(forms)) {
    for (const image of [...record.images, ...known]) {
      if (image.data.length >= 64 && content.includes(image.data.slice(0, 64))) found.push(`${form}: the data of an image`);
    }
    if (/iVBORw0KGgo|\/9j\/4/.test(content)) found.push(`${form}: base64 of a PNG or JPEG`);
    const run = /[A-Za-z0-9+/]{400,}={0,2}/.exec(content);
    if (run) found.push(`${form}: a base64 run of ${run[0].length} characters`);
  }
  return [...new Set(found)];
}

/** Images attached more than once to the same result (the same bytes). */
export function duplicateImages(record: CallRecord): number {
  return record.images.length - new Set(record.images.map((i) => i.data)).size;
}

// ---- the scratch files the tasks work on ------------------------------------------------------------

export interface ScratchFiles {
  dir: string;
  /** name -> { lines, words, chars } as Python's splitlines() / split() / len() count them. */
  counts: Record<string, { lines: number; words: number; chars: number }>;
  /** data.csv: the sum of `amount` per region. */
  regionTotals: Record<string, number>;
}

function countOf(text: string) {
  const newlines = text.split('\n').length - 1;
  return { lines: text.endsWith('\n') ? newlines : newlines + 1, words: text.split(/\s+/).filter(Boolean).length, chars: text.length };
}

/** Three files, about 250 KB in all: what a careless print loop floods the model with. */
export async function writeScratchFiles(dir: string): Promise<ScratchFiles> {
  let seed = 12345;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor(seed / 65536) % n;
  };
  const words = ['sandbox', 'agent', 'context', 'budget', 'tool', 'server', 'result', 'image', 'session', 'search', 'error', 'token'];
  const notes =
    Array.from({ length: 40 }, (_, i) => {
      const sentence = Array.from({ length: 8 + random(10) }, () => words[random(words.length)]).join(' ');
      return `${i + 1}. ${sentence[0]!.toUpperCase()}${sentence.slice(1)}.`;
    }).join('\n') + '\n';
  const regions = ['north', 'south', 'east', 'west'];
  const products = ['widget', 'gadget', 'gizmo'];
  const regionTotals: Record<string, number> = {};
  const rows = ['date,region,product,amount'];
  for (let i = 0; i < 1500; i++) {
    const region = regions[random(regions.length)]!;
    const amount = 10 + random(990);
    regionTotals[region] = (regionTotals[region] ?? 0) + amount;
    rows.push(
      `2026-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')},${region},${products[random(3)]},${amount}`,
    );
  }
  const csv = rows.join('\n') + '\n';
  const levels = ['INFO', 'INFO', 'INFO', 'WARN', 'ERROR', 'DEBUG'];
  const log =
    Array.from({ length: 2500 }, (_, i) => {
      const seconds = String(i % 60).padStart(2, '0');
      const minutes = String(Math.floor(i / 60) % 60).padStart(2, '0');
      return `2026-12-01T10:${minutes}:${seconds}Z ${levels[random(levels.length)]!.padEnd(5)} worker-${random(8)} GET /api/items/${random(5000)} handled in ${5 + random(400)} ms`;
    }).join('\n') + '\n';
  const files = { 'notes.txt': notes, 'data.csv': csv, 'app.log': log };
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return {
    dir,
    counts: Object.fromEntries(Object.entries(files).map(([name, text]) => [name, countOf(text)])),
    regionTotals,
  };
}

// ---- the bridge the tasks run against ---------------------------------------------------------------

export interface TaskBench {
  bridge: BridgeHandle;
  files: ScratchFiles;
  /** What the model reads before any call: the tools/list answer and the server's instructions. */
  listing: { tools: unknown[]; description: string; instructions: string };
  /** A second bridge, on the image with packages (TEST_DATA_IMAGE), started on first use; why not, when that image is missing. */
  packages(): Promise<TaskBench | { skip: string }>;
  close(): Promise<void>;
}

const run = promisify(execFile);

async function imageExists(runtime: string, image: string): Promise<boolean> {
  try {
    await run(runtime, ['image', 'inspect', '--format', '{{.Id}}', image]);
    return true;
  } catch {
    return false;
  }
}

/** What the model reads before its first call to a bridge. */
async function listingOf(bridge: BridgeHandle): Promise<TaskBench['listing']> {
  const { tools } = await bridge.client.listTools();
  return { tools, description: tools.map((t) => t.description ?? '').join('\n'), instructions: bridge.client.getInstructions() ?? '' };
}

/** The bridge proxying server-memory, server-filesystem (over the scratch files), the fixture and the screenshot server. */
export async function startTaskBench(runtime: string, image: string, dataImage = TEST_DATA_IMAGE): Promise<TaskBench> {
  const root = await tempDir('cem-agent-');
  const files = await writeScratchFiles(join(root, 'files'));
  await mkdir(join(root, 'memory'));
  const bridge = await startBridge({
    sandbox: { runtime, image, memory: '256m', timeoutSeconds: 30, maxSessions: 4 },
    servers: {
      memory: {
        command: process.execPath,
        args: [MEMORY_SERVER],
        env: { MEMORY_FILE_PATH: join(root, 'memory', 'graph.jsonl') },
        description: 'Knowledge graph memory',
      },
      filesystem: { command: process.execPath, args: [FILESYSTEM_SERVER, files.dir], description: 'Files of the project' },
      fixture: { command: process.execPath, args: [FIXTURE], description: 'Utilities: echo, add, sleep, image' },
      shots: { command: process.execPath, args: [SCREENSHOT_SERVER], description: 'Screenshots of the dashboard' },
    },
  });
  const listing = await listingOf(bridge);
  let packages: Promise<TaskBench | { skip: string }> | undefined;
  const startPackages = async (): Promise<TaskBench | { skip: string }> => {
    if (!(await imageExists(runtime, dataImage)))
      return { skip: `${dataImage} is not in ${runtime} (the image with numpy and matplotlib; set CEM_TEST_DATA_IMAGE)` };
    // The fixture alone: the task is about what the image has, not about servers.
    const other = await startBridge({
      sandbox: { runtime, image: dataImage, memory: '256m', timeoutSeconds: 30, maxSessions: 2 },
      servers: { fixture: { command: process.execPath, args: [FIXTURE], description: 'Utilities: echo, add, sleep, image' } },
    });
    const itself = { skip: 'this is the bench on the image with packages' };
    return { bridge: other, files, listing: await listingOf(other), packages: async () => itself, close: () => other.close() };
  };
  return {
    bridge,
    files,
    listing,
    packages: () => (packages ??= startPackages()),
    close: async () => {
      const other = await packages;
      if (other && 'bridge' in other) await other.close();
      await bridge.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** The part of the listing a client puts in front of the model: each tool's name, description and input schema. */
export function modelListing(bench: TaskBench): unknown[] {
  return bench.listing.tools.map((t) => {
    const { name, description, inputSchema } = t as { name: string; description?: string; inputSchema: unknown };
    return { name, description, inputSchema };
  });
}

// ---- the tasks ---------------------------------------------------------------------------------

export interface AgentTask {
  id: number;
  name: string;
  /** What the user asked for. */
  ask: string;
  session?: string;
  /** `packages`: run on the bench's second bridge, whose image has numpy and matplotlib. */
  image?: 'packages';
  run(agent: Agent, bench: TaskBench): Promise<void>;
}

const py = (s: string) => JSON.stringify(s);

/** Whether a result names a keyword the way a fix would: `path=`, `'path'`, `path:`. */
const namesKeyword = (text: string, name: string) => new RegExp(`\\b${name}=|['"\`]${name}['"\`]|\\b${name}:`).test(text);

export const TASKS: AgentTask[] = [
  {
    id: 1,
    name: 'discover',
    ask: 'What can you reach? Find the tools to read a text file and to look up entities in the knowledge graph.',
    async run(agent) {
      const servers = await agent.run('servers', 'discovered_servers()');
      // Tool names in the listing of servers make the search unnecessary.
      if (!(servers.text.includes('read_text_file') && servers.text.includes('search_nodes'))) {
        await agent.run(
          'search',
          [
            'for need in ["read the contents of a text file", "find entities in the knowledge graph by name"]:',
            '    print(need)',
            '    for h in await search_tool_docs(need, limit=3):',
            "        print(f\"  {h['server']}.{h['tool']}: {h['description'][:80]}\")",
          ].join('\n'),
        );
      }
      await agent.run('help', 'help(mcp_filesystem.read_text_file)\nhelp(mcp_memory.search_nodes)');
    },
  },
  {
    id: 2,
    name: 'read and aggregate files',
    ask: 'Count the lines and words of each file in the project folder, and in all.',
    async run(agent, { files }) {
      await agent.run('list', `DIR = ${py(files.dir)}\nlisting = await mcp_filesystem.list_directory(path=DIR)\nprint(listing)`);
      // The careless look at every file before counting: the flood.
      await agent.run(
        'look',
        [
          'names = [line.split(" ", 1)[1] for line in listing["content"].splitlines() if line.startswith("[FILE]")]',
          'for name in names:',
          '    r = await mcp_filesystem.read_text_file(path=f"{DIR}/{name}")',
          '    print(name, r)',
        ].join('\n'),
      );
      await agent.run(
        'count',
        [
          'rows = []',
          'for name in names:',
          '    text = (await mcp_filesystem.read_text_file(path=f"{DIR}/{name}"))["content"]',
          '    rows.append((name, len(text.splitlines()), len(text.split())))',
          'for name, lines, words in rows:',
          '    print(f"{name}: {lines} lines, {words} words")',
          'print(f"total: {sum(r[1] for r in rows)} lines, {sum(r[2] for r in rows)} words")',
        ].join('\n'),
      );
    },
  },
  {
    id: 3,
    name: 'memory graph',
    ask: 'Remember that Ada Lovelace worked with Charles Babbage, who designed the Analytical Engine; then tell me what you know about Babbage.',
    async run(agent) {
      const help = await agent.run('help', 'help(mcp_memory.create_entities)\nhelp(mcp_memory.create_relations)');
      // Fields the docs show are used; the others are guessed, as agents do.
      let entitiesKnown = /entityType/.test(help.text) && /observations/.test(help.text);
      let relationsKnown = /relationType/.test(help.text);
      const entities = () =>
        entitiesKnown
          ? [
              'await mcp_memory.create_entities(entities=[',
              '    {"name": "Ada Lovelace", "entityType": "person", "observations": ["wrote the first published algorithm"]},',
              '    {"name": "Charles Babbage", "entityType": "person", "observations": ["designed the Analytical Engine"]},',
              '    {"name": "Analytical Engine", "entityType": "machine", "observations": ["a mechanical general-purpose computer"]},',
              '])',
            ].join('\n')
          : [
              'await mcp_memory.create_entities(entities=[',
              '    {"name": "Ada Lovelace", "type": "person", "description": "wrote the first published algorithm"},',
              '    {"name": "Charles Babbage", "type": "person", "description": "designed the Analytical Engine"},',
              '    {"name": "Analytical Engine", "type": "machine", "description": "a mechanical general-purpose computer"},',
              '])',
            ].join('\n');
      const relations = () =>
        relationsKnown
          ? [
              'await mcp_memory.create_relations(relations=[',
              '    {"from": "Ada Lovelace", "to": "Charles Babbage", "relationType": "worked with"},',
              '    {"from": "Charles Babbage", "to": "Analytical Engine", "relationType": "designed"},',
              '])',
            ].join('\n')
          : [
              'await mcp_memory.create_relations(relations=[',
              '    {"source": "Ada Lovelace", "target": "Charles Babbage", "type": "worked with"},',
              '    {"source": "Charles Babbage", "target": "Analytical Engine", "type": "designed"},',
              '])',
            ].join('\n');
      let entitiesDone = false;
      let build = await agent.run('build', `${entities()}\n${relations()}\nprint("graph built")`);
      for (let attempt = 0; build.status !== 'ok' && attempt < 4; attempt++) {
        const inEntities = /create_entities/.test(said(build).text);
        if (!inEntities) entitiesDone = true;
        const tool = inEntities ? 'create_entities' : 'create_relations';
        const field = inEntities ? 'entityType' : 'relationType';
        // An error that names the missing field is fixed at once; otherwise the agent reads the full docs.
        if (!said(build).text.includes(field)) await agent.run('docs', `await query_tool_docs("memory", ${py(tool)}, detail="full")`);
        if (inEntities) entitiesKnown = true;
        else relationsKnown = true;
        build = await agent.run('build', `${entitiesDone ? '' : `${entities()}\n`}${relations()}\nprint("graph built")`);
      }
      await agent.run('query', 'await mcp_memory.search_nodes(query="Babbage")');
    },
  },
  {
    id: 4,
    name: 'return an image',
    ask: 'Draw a bar chart of 3, 7, 4, 9, 6; then show me a screenshot of the dashboard, and the largest of three sizes.',
    async run(agent, { listing }) {
      // The listing may say that only the standard library is there; otherwise agents reach for matplotlib.
      if (!/standard library|stdlib/i.test(listing.description)) {
        await agent.run(
          'matplotlib',
          [
            'import io',
            'import matplotlib',
            'matplotlib.use("Agg")',
            'import matplotlib.pyplot as plt',
            'plt.bar(range(5), [3, 7, 4, 9, 6])',
            'buf = io.BytesIO()',
            'plt.savefig(buf, format="png")',
            'emit_image(buf.getvalue())',
          ].join('\n'),
        );
      }
      if (!agent.has('matplotlib') || agent.call('matplotlib').status !== 'ok') {
        await agent.run(
          'chart',
          [
            'import struct, zlib',
            'def png(width, height, pixel):',
            '    rows = b"".join(b"\\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))',
            '    def chunk(kind, data):',
            '        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)',
            '    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)',
            '    return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")',
            'values = [3, 7, 4, 9, 6]',
            'W, H, BAR = 200, 120, 40',
            'def pixel(x, y):',
            '    return (70, 130, 180) if H - y <= values[x // BAR] * 12 and x % BAR < BAR - 6 else (255, 255, 255)',
            'emit_image(png(W, H, pixel))',
            'print("bar chart of", values)',
          ].join('\n'),
        );
      }
      const shot = await agent.run('screenshot', 'shot = await mcp_shots.screenshot()\nshot');
      // The agent takes the bytes the way the value showed them; with a placeholder it returns the result instead.
      const showsData = /['"]data['"]\s*:/.test(shot.text);
      await agent.run(
        'sizes',
        [
          ...(showsData ? ['import base64'] : []),
          'shots = []',
          'for width in (192, 224, 256):',
          '    shots.append(await mcp_shots.screenshot(width=width, height=width * 5 // 8))',
          ...(showsData
            ? [
                'image = next(part for part in shots[-1] if isinstance(part, dict) and part.get("type") == "image")',
                'emit_image(base64.b64decode(image["data"]), image["mimeType"])',
                'print(f"took {len(shots)} screenshots; showing the largest")',
              ]
            : ['print(f"took {len(shots)} screenshots; showing the largest")', 'shots[-1]']),
        ].join('\n'),
      );
    },
  },
  {
    id: 5,
    name: 'concurrent calls',
    ask: 'Run the five slow checks and read the three files, all at once; how big are the files?',
    async run(agent, { files }) {
      await agent.run(
        'gather',
        [
          'import asyncio, time',
          `DIR = ${py(files.dir)}`,
          'names = ["notes.txt", "data.csv", "app.log"]',
          't0 = time.perf_counter()',
          'slow, texts = await asyncio.gather(',
          '    asyncio.gather(*(mcp_fixture.sleep(ms=1000) for _ in range(5))),',
          '    asyncio.gather(*(mcp_filesystem.read_text_file(path=f"{DIR}/{n}") for n in names)),',
          ')',
          'print(f"{len(slow)} slow calls and {len(texts)} reads in {time.perf_counter() - t0:.1f} s")',
          '{n: len(t["content"]) for n, t in zip(names, texts)}',
        ].join('\n'),
      );
    },
  },
  {
    id: 6,
    name: 'blocked capabilities',
    ask: "Get cpython's star count from the GitHub API; then sum data.csv's amounts per region with pandas and save the table.",
    async run(agent, { files }) {
      const network = await agent.run(
        'network',
        [
          'import json, urllib.request',
          'with urllib.request.urlopen("https://api.github.com/repos/python/cpython", timeout=10) as response:',
          '    repo = json.load(response)',
          'repo["stargazers_count"]',
        ].join('\n'),
      );
      // "Temporary failure in name resolution" invites a retry without DNS.
      if (!NO_NETWORK.test(said(network).text)) {
        await agent.run('network-retry', 'import socket\nsocket.create_connection(("140.82.112.6", 443), timeout=5)');
      }
      const pandas = await agent.run(
        'pandas',
        [
          `DIR = ${py(files.dir)}`,
          'import io',
          'import pandas as pd',
          'raw = (await mcp_filesystem.read_text_file(path=f"{DIR}/data.csv"))["content"]',
          'df = pd.read_csv(io.StringIO(raw))',
          'df.groupby("region")["amount"].sum()',
        ].join('\n'),
      );
      if (!NO_PIP.test(said(pandas).text)) {
        await agent.run(
          'pip',
          [
            'import subprocess, sys',
            'p = subprocess.run([sys.executable, "-m", "pip", "install", "pandas"], capture_output=True, text=True)',
            'print(p.returncode, p.stdout[-500:], p.stderr[-500:])',
          ].join('\n'),
        );
      }
      await agent.run(
        'save-outside',
        [
          'import csv, io, os',
          'raw = (await mcp_filesystem.read_text_file(path=f"{DIR}/data.csv"))["content"]',
          'totals = {}',
          'for row in csv.DictReader(io.StringIO(raw)):',
          '    totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])',
          'os.makedirs("/mnt/data", exist_ok=True)',
          'with open("/mnt/data/totals.csv", "w", newline="") as f:',
          '    csv.writer(f).writerows(sorted(totals.items()))',
        ].join('\n'),
      );
      await agent.run(
        'save',
        [
          'with open("/work/totals.csv", "w", newline="") as f:',
          '    csv.writer(f).writerows(sorted(totals.items()))',
          'for region, total in sorted(totals.items()):',
          '    print(region, total)',
        ].join('\n'),
      );
    },
  },
  {
    id: 7,
    name: 'own mistakes',
    ask: 'Show me the first five and last three lines of app.log, and its size.',
    async run(agent, { files }) {
      // One program, several mistakes; each run shows the next one, as with real agents.
      const program = (fix: { colon: boolean; server: boolean; keyword: boolean; positional: boolean; awaited: boolean }) =>
        [
          `DIR = ${py(files.dir)}`,
          `fs = ${fix.server ? 'mcp_filesystem' : 'mcp_filesytem'}`,
          `head = await fs.read_text_file(${fix.keyword ? 'path' : 'file_path'}=f"{DIR}/app.log", head=5)`,
          `info = await fs.get_file_info(${fix.positional ? 'path=' : ''}f"{DIR}/app.log")`,
          `tail = ${fix.awaited ? 'await ' : ''}fs.read_text_file(${fix.keyword ? 'path' : 'file_path'}=f"{DIR}/app.log", tail=3)`,
          'lines = head["content"].splitlines() + ["..."] + tail["content"].splitlines()',
          `for i, line in enumerate(lines, 1)${fix.colon ? ':' : ''}`,
          '    print(i, line)',
          'info',
        ].join('\n');
      const fix = { colon: false, server: false, keyword: false, positional: false, awaited: false };
      await agent.run('syntax', program(fix));
      fix.colon = true;
      await agent.run('typo', program(fix));
      fix.server = true;
      const keyword = await agent.run('keyword', program(fix));
      // An error that names the valid keyword is fixed at once; otherwise the agent looks it up.
      if (!namesKeyword(said(keyword).text, 'path')) await agent.run('keyword-help', 'help(mcp_filesystem.read_text_file)');
      fix.keyword = true;
      await agent.run('positional', program(fix));
      fix.positional = true;
      await agent.run('await', program(fix));
      fix.awaited = true;
      await agent.run('done', program(fix));
    },
  },
  {
    id: 8,
    name: 'persistence',
    ask: 'Keep a running word count across my messages; then start over.',
    session: 'analysis',
    async run(agent) {
      await agent.run(
        'define',
        [
          'from collections import Counter',
          'counts = Counter()',
          'def add(text):',
          '    counts.update(text.lower().split())',
          '    return len(counts)',
          'add("the quick brown fox jumps over the lazy dog")',
        ].join('\n'),
      );
      await agent.run('reuse', 'add("the dog barks")\ncounts.most_common(3)');
      await agent.run('reset', '"counts" in globals()', { reset: true });
    },
  },
  {
    id: 9,
    name: 'nothing fits',
    ask: 'What will the weather be in Paris tomorrow? Use a weather service if one is configured.',
    async run(agent) {
      // Told that nothing fits, the agent tells the user so and makes no other call; hits with
      // no score and no note leave it guessing: it tries other words, then looks at the best hit.
      await searchUntilTold(agent, 'what is the weather in Paris tomorrow', 'weather forecast for a city', [NOTHING_FITS]);
    },
  },
  {
    id: 10,
    name: 'resource read',
    ask: "What does the fixture server's readme resource say?",
    async run(agent, { listing }) {
      // An agent that was never told of list_resources looks for it among the names it has.
      if (!/list_resources/.test(`${listing.instructions}\n${listing.description}`)) {
        await agent.run('globals', 'print(sorted(n for n in globals() if "resource" in n or "prompt" in n))');
      }
      const list = await agent.run(
        'resources',
        ['for r in await list_resources("fixture"):', '    print(r["uri"], "|", r.get("name"), "|", r.get("description", ""))'].join('\n'),
      );
      // The URI comes from what the listing showed.
      const uri = /fixture:\/\/readme\b/.exec(said(list).text)?.[0] ?? 'fixture://readme';
      await agent.run(
        'read',
        [`for part in await read_resource("fixture", ${py(uri)}):`, '    print(part.get("mimeType"), part.get("text"))'].join('\n'),
      );
    },
  },
  {
    id: 11,
    name: 'image with packages',
    ask: 'Fit a straight line to y = 2.1, 3.9, 6.2, 7.8, 10.1 over x = 1..5; give its slope and intercept and the standard deviation of y.',
    image: 'packages',
    async run(agent, { listing }) {
      // The listing may name numpy already; otherwise the agent asks the sandbox what it has.
      let named = NAMES_NUMPY.test(listing.description);
      if (!named) {
        const summary = await agent.run('summary', 'print(capability_summary())');
        named = NAMES_NUMPY.test(said(summary).text);
      }
      if (named) {
        await agent.run(
          'numpy',
          [
            'import numpy as np',
            'x = np.arange(1, 6)',
            'y = np.array([2.1, 3.9, 6.2, 7.8, 10.1])',
            'slope, intercept = np.polyfit(x, y, 1)',
            'print(f"slope {slope:.2f}, intercept {intercept:.2f}, std {y.std(ddof=1):.3f}")',
          ].join('\n'),
        );
      } else {
        // Told "standard library only", it does without.
        await agent.run(
          'stdlib',
          [
            'import statistics',
            'x = [1, 2, 3, 4, 5]',
            'y = [2.1, 3.9, 6.2, 7.8, 10.1]',
            'fit = statistics.linear_regression(x, y)',
            'print(f"slope {fit.slope:.2f}, intercept {fit.intercept:.2f}, std {statistics.stdev(y):.3f}")',
          ].join('\n'),
        );
      }
    },
  },
  {
    id: 12,
    name: 'file out',
    ask: 'Export the rows of data.csv with an amount of 500 or more as a CSV file I can open in a spreadsheet.',
    async run(agent, { files }) {
      const exported = await agent.run(
        'export',
        [
          'import csv, io',
          `raw = (await mcp_filesystem.read_text_file(path=${py(`${files.dir}/data.csv`)}))["content"]`,
          'rows = [r for r in csv.DictReader(io.StringIO(raw)) if int(r["amount"]) >= 500]',
          'out = io.StringIO()',
          'writer = csv.DictWriter(out, fieldnames=["date", "region", "product", "amount"])',
          'writer.writeheader()',
          'writer.writerows(rows)',
          'csv_text = out.getvalue()',
          'with open("/work/out/large-sales.csv", "w", newline="") as f:',
          '    f.write(csv_text)',
          'print(len(rows), "rows written to large-sales.csv")',
        ].join('\n'),
      );
      // Not told where the user finds the file, the agent hands it over the only way it can: as text.
      if (!FILE_WHERE.test(said(exported).text)) await agent.run('paste', 'print(csv_text)');
    },
  },
  {
    id: 13,
    name: 'timeout keeps state',
    ask: 'Index the words of notes.txt, then score every word with the slow scorer; stop if it takes too long and tell me how far it got.',
    session: 'long',
    async run(agent, { files }) {
      await agent.run(
        'load',
        [
          `text = (await mcp_filesystem.read_text_file(path=${py(`${files.dir}/notes.txt`)}))["content"]`,
          'index = {}',
          'for i, word in enumerate(text.lower().split()):',
          '    index.setdefault(word.strip(".,"), []).append(i)',
          'print(len(index), "distinct words")',
        ].join('\n'),
      );
      const slow = await agent.run(
        'slow',
        [
          'import time',
          'scored = {}',
          'for word in index:',
          '    time.sleep(1)  # the slow scorer',
          '    scored[word] = len(index[word])',
          'len(scored)',
        ].join('\n'),
        { timeout: 3 },
      );
      // Without a word on the session's state, the agent checks before it relies on it.
      if (!STATE_KEPT.test(said(slow).text)) await agent.run('check', 'print("index" in globals(), "scored" in globals())');
      await agent.run('resume', 'print(f"scored {len(scored)} of {len(index)} words before the timeout")');
    },
  },
  {
    id: 14,
    name: 'weak hits',
    ask: 'Turn off the living room lights, if any of my tools can.',
    async run(agent) {
      // Told that the hits may not do it and which servers there are, the agent reads the hits it
      // was shown and tells the user; hits with no such note look like answers: it tries other
      // words, then reads the docs of the best hit.
      await searchUntilTold(agent, 'turn off the living room lights', 'switch off a lamp', [NOTHING_FITS, WEAK_HITS]);
    },
  },
];

/** The code of a search as an agent writes it: three hits, one line each, and their count. */
function searchCode(query: string): string {
  return [
    `hits = await search_tool_docs(${py(query)}, limit=3)`,
    'for h in hits:',
    "    print(h['server'], h['tool'], h.get('score'), h['description'][:80])",
    'print(len(hits), "hits")',
  ].join('\n');
}

/**
 * A search for `query` ('search'); unless what it says matches one of `stop`, the agent searches
 * again in `other` words ('search-again'), then reads help() of the best hit ('best-hit').
 */
async function searchUntilTold(agent: Agent, query: string, other: string, stop: readonly RegExp[]): Promise<void> {
  const search = await agent.run('search', searchCode(query));
  if (stop.some((pattern) => pattern.test(said(search).text))) return;
  const again = await agent.run('search-again', searchCode(other));
  const best = /^(\w+) (\w+) /m.exec(said(again).text);
  if (best) await agent.run('best-hit', `help(mcp_${best[1]}.${best[2]})`);
}

/** What a search that found nothing must say, so that the model stops looking. */
export const NOTHING_FITS = /nothing fits|no (configured )?tool[^.\n]{0,40}does this/i;
/** What a search whose hits all score low must say: they may not do it, and which servers there are. */
export const WEAK_HITS = /only weak matches|(hits|matches) may not do (it|this)/i;
/** What a run stopped by its timeout must say when the session's variables are still there. */
export const STATE_KEPT = /\b(state|variables)\b[^.\n]{0,40}\b(is|are|were|was) kept\b|variables[^.\n]{0,40}still (defined|there)/i;
/** What a result with a file attached must say: where the user finds it. */
export const FILE_WHERE = /Save As|Sandbox Runs|run log|state folder/i;
/** A result that names numpy among what the image has. */
export const NAMES_NUMPY = /\bnumpy\b/;

/** The fix a network failure must carry. */
export const NO_NETWORK = /\bno network\b|network (access )?(is )?(disabled|unavailable|not available|blocked)|without (a )?network/i;
/** The fix a missing module must carry. */
export const NO_PIP =
  /no pip\b|cannot (use )?pip|pip[^.\n]{0,40}(not available|isn't available|unavailable|not installed|does not work|cannot)/i;

export async function runTask(task: AgentTask, bench: TaskBench): Promise<Agent> {
  const target = task.image === 'packages' ? await bench.packages() : bench;
  if ('skip' in target) {
    const agent = new Agent(task.id, bench.bridge, task.session);
    agent.skipped = target.skip;
    return agent;
  }
  const agent = new Agent(task.id, target.bridge, task.session);
  await task.run(agent, target);
  return agent;
}
