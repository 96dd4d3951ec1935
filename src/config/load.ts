// Reading the standalone bridge's JSON configuration file, with errors that name the field.
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { configSchema, type Config } from './schema.ts';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * "sandbox.memory: must be a size such as "512m"" — one line per problem (or `separator`
 * between them, where they must fit on one line), each path under `prefix`; a problem of the
 * whole value is named `whole`.
 */
export function describeIssues(error: z.ZodError, prefix = '', { whole = '(top level)', separator = '\n' } = {}): string {
  return error.issues
    .map((issue) => {
      const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
      return `${path || whole}: ${issue.message}`;
    })
    .join(separator);
}

export function parseConfig(raw: unknown, source = 'configuration'): Config {
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`Invalid ${source}:\n${describeIssues(parsed.error)}`);
  const { workspaceFolder, workspaceSnippetsDir } = parsed.data;
  return {
    ...parsed.data,
    stateDir: expandHome(parsed.data.stateDir),
    ...(workspaceFolder ? { workspaceFolder: expandHome(workspaceFolder) } : {}),
    ...(workspaceSnippetsDir ? { workspaceSnippetsDir: expandHome(workspaceSnippetsDir) } : {}),
  };
}

export async function loadConfigFile(path: string): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read the configuration file ${path}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`The configuration file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  return parseConfig(raw, `configuration file ${path}`);
}

export function expandHome(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return resolve(homedir(), path.slice(2));
  return resolve(path);
}
