// One writer of a shared state dir, as a bridge is: run-log events and catalog saves, as fast
// as it can. Started several times at once by state-writers.test.ts.
// Usage: node state-writer-child.ts DIR NAME RUNS
import { setCatalogWriter } from '../../src/state/catalog-file.ts';
import { ToolCatalog } from '../../src/bridge/catalog/catalog.ts';
import { RunLog } from '../../src/state/run-log/writer.ts';
import { runResult } from '../helpers/run-result.ts';

const [dir, name, count] = process.argv.slice(2) as [string, string, string];
setCatalogWriter({ role: 'bridge', owner: name });
const log = new RunLog(dir, { maxFileBytes: 16 * 1024, keepFiles: 1000 });
const servers = [`${name}-a`, `${name}-b`];
const catalog = new ToolCatalog(
  servers.map((s) => ({ name: s, fingerprint: `f-${s}` })),
  dir,
);

for (let i = 0; i < Number(count); i++) {
  const run = `${name}-${i}`;
  log.runStarted({ run, session: name, code: `# ${run}\n${'x = 1\n'.repeat(40)}`, timeoutMs: 1000 });
  for (let c = 0; c < 3; c++)
    log.toolCall({ run, server: servers[0]!, tool: 'echo', arguments: { c, pad: 'p'.repeat(50) }, outcome: 'ok', durationMs: 1 });
  log.runEnded(runResult({ runId: run, session: name, stdout: `${run}\n`, requests: 3 }), { toolCalls: 3 });
  if (i % 10 === 0) {
    catalog.setState(servers[i % 20 === 0 ? 0 : 1]!, 'running');
    catalog.setTools(servers[0]!, [{ name: `tool-${i}` }]);
    // Let the coalesced save go out now and then, so that saves of the writers overlap.
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
catalog.setTools(servers[1]!, [{ name: 'last' }]);
catalog.setState(servers[1]!, 'error', `${name} broke`);
await catalog.flush();
log.close();
