// Variables in a proxied server's entry, as VS Code's mcp.json has them: `${workspaceFolder}`,
// `${workspaceFolderBasename}`, `${userHome}`, `${env:NAME}`, `${pathSeparator}` (`${/}`) and
// `${input:ID}` (a stored secret). Users copy entries from mcp.json, so the same forms must
// mean the same here. Unknown forms are left as they are. Pure: the caller supplies the facts.
import { basename } from 'node:path';
import type { HttpServerConfig, ServerConfig, StdioServerConfig } from './schema.ts';

export interface VariableContext {
  /** Undefined when no workspace folder is known: then `${workspaceFolder}` is an error. */
  workspaceFolder?: string | undefined;
  userHome: string;
  pathSeparator: string;
  /** The bridge's own environment, for `${env:NAME}`. */
  env: Readonly<Record<string, string | undefined>>;
  /** Environment names compare without case (Windows). */
  envIgnoresCase?: boolean;
  /** Stored values of `${input:ID}`. */
  inputs: Readonly<Record<string, string>>;
}

export class VariableError extends Error {
  override readonly name = 'VariableError';
  /** The variable as written, e.g. `${input:token}`. */
  readonly variable: string;
  /** For `${input:ID}`: the id that has no stored value. */
  readonly inputId: string | undefined;
  constructor(message: string, variable: string, inputId?: string) {
    super(message);
    this.variable = variable;
    this.inputId = inputId;
  }
}

const VARIABLE = /\$\{([^{}]+)\}/g;

/** Replaces every known variable in `text`; throws VariableError for one that cannot be resolved. */
export function substitute(text: string, context: VariableContext): string {
  return text.replace(VARIABLE, (whole, inner: string) => {
    switch (inner) {
      case 'workspaceFolder':
      case 'workspaceFolderBasename':
        if (context.workspaceFolder === undefined) {
          throw new VariableError(
            `${whole} is used but no workspace folder is known (open a folder, or give the bridge --workspace DIR)`,
            whole,
          );
        }
        return inner === 'workspaceFolder' ? context.workspaceFolder : basename(context.workspaceFolder);
      case 'userHome':
        return context.userHome;
      case 'pathSeparator':
      case '/':
        return context.pathSeparator;
    }
    if (inner.startsWith('env:')) return lookupEnv(inner.slice(4), context) ?? '';
    if (inner.startsWith('input:')) {
      const id = inner.slice(6);
      const value = Object.hasOwn(context.inputs, id) ? context.inputs[id] : undefined;
      if (value === undefined) throw new VariableError(`${whole} has no stored value`, whole, id);
      return value;
    }
    return whole;
  });
}

function lookupEnv(name: string, context: VariableContext): string | undefined {
  if (Object.hasOwn(context.env, name)) return context.env[name];
  if (!context.envIgnoresCase) return undefined;
  const key = Object.keys(context.env).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : context.env[key];
}

/**
 * The entry with variables substituted where mcp.json allows them: a stdio server's command,
 * args, env values and cwd; an HTTP server's url and header values. Values listed in `literal`
 * (env or header names whose values are stored secrets) are kept exactly as stored.
 */
export function substituteServer<T extends ServerConfig>(config: T, context: VariableContext, literal: ReadonlySet<string> = new Set()): T {
  const sub = (text: string) => substitute(text, context);
  const values = (record: Record<string, string>) =>
    Object.fromEntries(Object.entries(record).map(([key, value]) => [key, literal.has(key) ? value : sub(value)]));
  if ('command' in config) {
    const stdio = config as StdioServerConfig;
    return {
      ...stdio,
      command: sub(stdio.command),
      args: stdio.args.map(sub),
      env: values(stdio.env),
      ...(stdio.cwd !== undefined ? { cwd: sub(stdio.cwd) } : {}),
    } as T;
  }
  const http = config as HttpServerConfig;
  return { ...http, url: sub(http.url), headers: values(http.headers) } as T;
}
