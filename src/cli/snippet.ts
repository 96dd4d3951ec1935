// `code-execution-mode snippet list | save NAME --run RUN_ID | remove NAME`: the command-line
// way to promote a logged run to a snippet in <stateDir>/snippets (and to list or remove them).
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/schema.ts';
import { RunLog } from '../state/run-log/writer.ts';
import { RunLogReader } from '../state/run-log/reader.ts';
import { SnippetStore, snippetDirs, snippetHash, snippetNameProblem, snippetSourceFromRun, writeSnippet } from '../state/snippets.ts';

export class SnippetUsageError extends Error {
  override readonly name = 'UsageError';
}

export interface SnippetCliOptions {
  run?: string;
  description?: string;
  params?: string;
  force?: boolean;
}

export async function snippetCommand(
  config: Config,
  values: SnippetCliOptions,
  rest: string[],
  out: (line: string) => void,
): Promise<number> {
  const [action, name, ...extra] = rest;
  const userDir = join(config.stateDir, 'snippets');
  const store = new SnippetStore(snippetDirs(config.stateDir, config.workspaceSnippetsDir));
  if (extra.length > 0) throw new SnippetUsageError(`snippet ${action}: unexpected "${extra[0]}"`);
  switch (action) {
    case 'list': {
      if (name) throw new SnippetUsageError('snippet list takes no name');
      const snippets = await store.list();
      if (snippets.length === 0) out(`no snippets in ${userDir}${config.workspaceSnippetsDir ? ` or ${config.workspaceSnippetsDir}` : ''}`);
      for (const s of snippets) {
        out(`${s.name}(${s.params ?? ''})${s.origin === 'workspace' ? ' [workspace]' : ''}  ${s.description.split('\n')[0] ?? ''}`);
      }
      return 0;
    }
    case 'save': {
      if (!name) throw new SnippetUsageError('snippet save needs a NAME');
      const problem = snippetNameProblem(name);
      if (problem) throw new SnippetUsageError(problem);
      if (!values.run) throw new SnippetUsageError('snippet save needs --run RUN_ID (the run whose code to save)');
      const runs = new RunLogReader(config.stateDir).runs();
      const run = runs.find((r) => r.id === values.run) ?? matchPrefix(runs, values.run);
      if (!run) throw new SnippetUsageError(`no run "${values.run}" in the run log of ${config.stateDir}`);
      const params = (values.params ?? '')
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean);
      let source: string;
      try {
        // The file names the run it came from, as Save as Snippet in the editor does.
        source = snippetSourceFromRun(values.description ?? firstComment(run.code) ?? `Saved from run ${run.id}.`, run.code, params, {
          run: run.id,
          session: run.session,
          started: run.started,
        });
      } catch (error) {
        throw new SnippetUsageError((error as Error).message);
      }
      try {
        const path = await writeSnippet(userDir, name, source, { overwrite: values.force === true });
        // The audit record says which run the snippet came from.
        const runLog = new RunLog(config.stateDir);
        try {
          runLog.snippetSaved({ run: run.id, name, sha256: snippetHash(source) });
        } finally {
          runLog.close();
        }
        if (runLog.problem) out(`warning: the save is not in the run log: ${runLog.problem}`);
        out(
          `saved ${path}: review it (the parameters of main replace values in the code), then run it with await run_snippet("${name}", ...)`,
        );
        return 0;
      } catch (error) {
        if ((error as { code?: string }).code === 'EEXIST') throw new SnippetUsageError(`snippet "${name}" exists; --force replaces it`);
        throw error;
      }
    }
    case 'remove': {
      if (!name) throw new SnippetUsageError('snippet remove needs a NAME');
      const problem = snippetNameProblem(name);
      if (problem) throw new SnippetUsageError(problem);
      const path = join(userDir, `${name}.py`);
      const existing = (await store.list()).find((s) => s.name === name && s.origin === 'user');
      if (!existing) throw new SnippetUsageError(`there is no snippet "${name}" in ${userDir}`);
      await rm(path);
      out(`removed ${path}`);
      return 0;
    }
    default:
      throw new SnippetUsageError(`snippet needs list, save or remove${action ? `, not "${action}"` : ''}`);
  }
}

/** A unique run whose id starts with the text (ids are long UUIDs). */
function matchPrefix<T extends { id: string }>(runs: T[], prefix: string): T | undefined {
  if (prefix.length < 6) return undefined;
  const found = runs.filter((r) => r.id.startsWith(prefix));
  return found.length === 1 ? found[0] : undefined;
}

function firstComment(code: string): string | undefined {
  return /^\s*#\s*(.+)$/m.exec(code)?.[1]?.trim() || undefined;
}
