// Run with --expose-gc: the bridge in this process (client and server linked in memory),
// `rounds` rounds of `perRound` run_python calls over 4 sessions; after each round a full GC
// and the heap in use. A flat series means the bridge keeps nothing per run.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBridge } from '../src/bridge/server.ts';
import { parseConfig } from '../src/config/load.ts';

const [sandboxJson = '{}', rounds = '6', perRound = '300'] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const config = parseConfig({ sandbox: JSON.parse(sandboxJson) as unknown, stateDir: mkdtempSync(join(tmpdir(), 'cem-soak-')) });
const bridge = await createBridge(config);
const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
await bridge.server.connect(serverSide);
const client = new Client({ name: 'soak', version: '1.0.0' });
await client.connect(clientSide);
const heapMb: number[] = [];
for (let round = 0; round < Number(rounds); round++) {
  for (let i = 0; i < Number(perRound); i++) {
    const result = await client.callTool({ name: 'run_python', arguments: { code: `x = ${i}\nx * 2`, session: `s${i % 4}` } });
    if ((result.structuredContent as { value?: string } | undefined)?.value !== String(i * 2)) throw new Error(`wrong result at ${i}`);
  }
  gc();
  gc();
  heapMb.push(process.memoryUsage().heapUsed / 1e6);
}
await client.close();
await bridge.close();
process.stdout.write(`${JSON.stringify({ perRound: Number(perRound), heapMb })}\n`);
