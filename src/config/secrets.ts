// Secrets for proxied servers (tokens, API keys). The extension keeps them in VS Code's
// SecretStorage and hands them to the bridge in a file sealed with its token key (read again
// on each reload, so changes reach the running bridge: state/secrets-file.ts), or, without a
// key, in one environment variable read at start, never in a plain file. The bridge merges each
// into its own server's env or headers and drops the variable, so no other server and never the
// sandbox sees them. `inputs` hold the values of `${input:ID}` variables (as in VS Code's
// mcp.json), substituted when the server starts.
import { z } from 'zod';
import type { Config, HttpServerConfig, StdioServerConfig } from './schema.ts';

export const SECRETS_ENV = 'CODE_EXECUTION_MODE_SECRETS';

export const secretsSchema = z.record(
  z.string(),
  z.object({
    env: z.record(z.string(), z.string()).default({}),
    headers: z.record(z.string(), z.string()).default({}),
    inputs: z.record(z.string(), z.string()).optional(),
  }),
);
export type Secrets = z.infer<typeof secretsSchema>;
export type ServerSecret = Secrets[string];

/**
 * A configuration with secrets applied. `secrets` rides along in memory (the file schema
 * refuses the key, so only this code sets it): the hub needs the inputs, and the values to
 * redact them from servers' error output.
 */
export type ConfigWithSecrets = Config & {
  secrets?: Secrets;
  /** Seals OAuth token files (state/oauth-tokens.ts); taken from the environment like the secrets. */
  tokenKey?: Buffer | undefined;
};

export function applySecrets(config: Config, secrets: Secrets): ConfigWithSecrets {
  const servers = { ...config.servers };
  for (const [name, secret] of Object.entries(secrets)) {
    const server = servers[name];
    if (!server) continue;
    if ('command' in server) {
      const stdio = server as StdioServerConfig;
      servers[name] = { ...stdio, env: { ...stdio.env, ...secret.env } };
    } else {
      const http = server as HttpServerConfig;
      servers[name] = { ...http, headers: { ...http.headers, ...secret.headers } };
    }
  }
  return { ...config, servers, secrets };
}

/** Reads and removes the secrets variable from an environment (the bridge's own). */
export function takeSecrets(env: NodeJS.ProcessEnv): Secrets {
  const raw = env[SECRETS_ENV];
  delete env[SECRETS_ENV];
  if (!raw) return {};
  const parsed = secretsSchema.safeParse(JSON.parse(raw));
  if (!parsed.success) throw new Error(`${SECRETS_ENV} is malformed: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}
