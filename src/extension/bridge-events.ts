// The bridge's notable events in the extension's output channel: server state changes (with
// their errors) from the catalog, and each run's end from the run log. VS Code shows the
// bridge's own stderr elsewhere (the MCP server's output); this puts what matters in one place.
import type * as vscode from 'vscode';
import { runEndLine } from './views/run-text.ts';
import type { StateFiles } from './state-files.ts';

export function logBridgeEvents(files: StateFiles, log: vscode.LogOutputChannel): vscode.Disposable[] {
  const states = new Map(Object.entries(files.catalog()).map(([name, s]) => [name, `${s.state}|${s.error ?? ''}`]));
  const ended = new Set(
    files
      .runs()
      .filter((r) => r.status)
      .map((r) => r.id),
  );
  return [
    files.onDidChangeCatalog(() => {
      for (const [name, server] of Object.entries(files.catalog())) {
        const key = `${server.state}|${server.error ?? ''}`;
        if (states.get(name) === key) continue;
        states.set(name, key);
        if (server.state === 'error') log.error(`server ${name}: ${server.error ?? 'error'}`);
        else log.info(`server ${name}: ${server.state}${server.tools ? ` (${server.tools.length} tools)` : ''}`);
      }
    }),
    files.onDidChangeRuns(() => {
      for (const run of files.runs()) {
        if (!run.status || ended.has(run.id)) continue;
        ended.add(run.id);
        const line = runEndLine(run);
        if (run.status === 'ok') log.info(line);
        else log.warn(`${line}${run.error ? ` - ${run.error.type}: ${run.error.message}` : ''}`);
      }
    }),
  ];
}
