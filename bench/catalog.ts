// Context cost and search speed at scale: the tokens an agent pays to see every proxied tool
// directly, against the bridge's one small listing; and search latency over 5,000 tools.
import { readFileSync } from 'node:fs';
import { ToolCatalog, type ListedTool } from '../src/bridge/catalog/catalog.ts';
import { listingTokens } from './bridge.ts';
import { summarize, type Summary } from './stats.ts';

interface ToolLists {
  servers: Record<string, { tools: ListedTool[] }>;
}

function realTools(): Array<{ server: string; tool: ListedTool }> {
  const lists = JSON.parse(readFileSync('test/fixtures/tool-lists.json', 'utf8')) as ToolLists;
  return Object.entries(lists.servers).flatMap(([server, s]) => s.tools.map((tool) => ({ server, tool })));
}

/** n tools made from the real ones, renamed so that every copy is a distinct tool. */
export function syntheticTools(n: number): Array<{ server: string; tool: ListedTool }> {
  const real = realTools();
  return Array.from({ length: n }, (_, i) => {
    const { server, tool } = real[i % real.length]!;
    const copy = Math.floor(i / real.length);
    return { server: copy === 0 ? server : `${server}-${copy}`, tool: { ...tool, name: copy === 0 ? tool.name : `${tool.name}_v${copy}` } };
  });
}

export interface ContextRow {
  catalog: string;
  tools: number;
  directTokens: number;
}

export function contextFigures(): ContextRow[] {
  const rows: ContextRow[] = [];
  const real = realTools();
  rows.push({ catalog: 'real npm servers', tools: real.length, directTokens: listingTokens(real.map((t) => t.tool)) });
  for (const n of [100, 1000, 5000]) {
    const tools = syntheticTools(n);
    rows.push({ catalog: `synthetic ${n}`, tools: n, directTokens: listingTokens(tools.map((t) => t.tool)) });
  }
  return rows;
}

export function catalogOf(entries: Array<{ server: string; tool: ListedTool }>): ToolCatalog {
  const servers = [...new Set(entries.map((e) => e.server))];
  const catalog = new ToolCatalog(servers.map((name) => ({ name, fingerprint: name })));
  for (const server of servers)
    catalog.setTools(
      server,
      entries.filter((e) => e.server === server).map((e) => e.tool),
    );
  return catalog;
}

export function searchLatency(n: number, rounds: number): { tools: number; buildMs: number; query: Summary; longQuery: Summary } {
  const catalog = catalogOf(syntheticTools(n));
  const queries = [
    'open a pull request',
    'send a chat message to a channel',
    'list the files in a folder',
    'run a SQL query',
    'take a screenshot of the page',
  ];
  const buildStart = performance.now();
  catalog.search('warm up', 1);
  const buildMs = performance.now() - buildStart;
  const samples: number[] = [];
  // A pasted page as a query: only its first words count, so it costs about what a short one does.
  const words = ['open', 'a', 'file', 'how', 'far', 'mouse', 'over', 'when', 'was', 'run', 'sql', 'the', 'issue', '42'];
  const long = Array.from({ length: 1000 }, (_, i) => `${words[i % words.length]}${i % 3 === 0 ? i : ''}`).join(' ');
  const longSamples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    catalog.search(long, 5);
    longSamples.push(performance.now() - start);
  }
  for (let r = 0; r < rounds; r++) {
    for (const q of queries) {
      const start = performance.now();
      catalog.search(q, 5);
      samples.push(performance.now() - start);
    }
  }
  return { tools: n, buildMs, query: summarize(samples), longQuery: summarize(longSamples) };
}
