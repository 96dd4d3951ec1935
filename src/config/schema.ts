// The one configuration shape, shared by the extension (from settings) and the standalone
// bridge (from a JSON file). Every value here is untrusted input: it is validated before use
// and errors name the offending field.
import { isAbsolute, win32 } from 'node:path';
import { z } from 'zod';
import { indexUrlProblem, MAX_PACKAGES, requirementProblem } from './packages.ts';
import { checkExtraRunArgs } from './run-args.ts';
import { parseNetworkPattern } from './network-patterns.ts';

/** Memory sizes as the container CLIs take them: a number and a unit (b, k, m, g). */
const memorySize = z
  .string()
  // Both cases spelled out, not /i: the settings' JSON Schema (generated from this) has no flags.
  .regex(/^[1-9][0-9]*[bkmgBKMG]$/, 'must be a size such as "512m" or "2g"');

/** Extra `run` arguments: an allow-list of options that cannot weaken the sandbox (run-args.ts). */
const extraRunArgs = z.array(z.string().min(1)).superRefine((args, ctx) => {
  for (const problem of checkExtraRunArgs(args)) ctx.addIssue({ code: 'custom', path: [problem.index], message: problem.message });
});

/** pip requirements for the derived image (packages.ts says what is accepted and why). */
const packageList = z
  .array(z.string())
  .max(MAX_PACKAGES, `at most ${MAX_PACKAGES} packages`)
  .superRefine((list, ctx) => {
    for (const [index, text] of list.entries()) {
      const problem = requirementProblem(text);
      if (problem) ctx.addIssue({ code: 'custom', path: [index], message: `"${text.slice(0, 60)}" ${problem}` });
    }
  });

/** An absolute path to an executable: never a shell line. */
const executablePath = z
  .string()
  .min(1)
  .refine((p) => isAbsolute(p) || win32.isAbsolute(p), { message: 'must be an absolute path to the executable' });

/** A podman connection's or docker context's name: never an option, never a shell line. */
const engineName = z
  .string()
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.+@-]*$/, { message: 'must be a connection or context name (letters, digits, _ . + @ -)' });

/** An OCI runtime: a plain name (runsc, crun) or an absolute path, with no shell or option characters. */
const ociRuntime = z
  .string()
  .max(4096)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$|^\/[A-Za-z0-9._+/-]*[A-Za-z0-9._+-]$/,
    'must be the name of an OCI runtime (e.g. "runsc") or an absolute path to one, without spaces or shell characters',
  );

/** A folder to mount in the sandbox: absolute, and nothing a mount option would read as a separator. */
const workspacePath = z
  .string()
  .min(1)
  .refine((p) => isAbsolute(p) || win32.isAbsolute(p), { message: 'must be an absolute path' })
  .refine((p) => !/[,:"\n\r]/.test(p.replace(/^[A-Za-z]:/, '')), { message: 'must not contain ",", ":", quotes or line breaks' });

/** Hosts the sandbox may reach through the bridge's proxy (network-patterns.ts says what is accepted). */
const networkAllow = z
  .array(z.string())
  .max(256, 'at most 256 hosts')
  .superRefine((list, ctx) => {
    for (const [index, text] of list.entries()) {
      const parsed = parseNetworkPattern(text);
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', path: [index], message: `"${text.slice(0, 80)}" ${parsed}` });
    }
  });

/**
 * Network for sandboxed code, through the bridge's HTTP proxy only (the container itself keeps no
 * network). Absent, or an empty list without `ask`: no network at all.
 */
const networkConfig = z
  .object({
    /** `host`, `host:port`, `*.domain`; loopback and private addresses only when listed exactly with their port. */
    allow: networkAllow.default([]),
    /** Ask the user (through the client) about a host that is not listed, instead of refusing it. */
    ask: z.boolean().default(false),
    /** Requests one run may make through the proxy. */
    maxRequestsPerRun: z.number().int().min(1).max(100_000).default(256),
    /** Bytes (both ways together) one run may move through the proxy. */
    maxBytesPerRun: z
      .number()
      .int()
      .min(1024)
      .max(16 * 1024 * 1024 * 1024)
      .default(512 * 1024 * 1024),
    /** Connections through the proxy open at once, per session. */
    maxConnections: z.number().int().min(1).max(256).default(16),
  })
  .strict();

/** Folders one sandbox mounts at most (sandbox.workspace.path as a list). */
export const MAX_WORKSPACE_FOLDERS = 16;
/** sandbox.workspace.snapshotMaxMB when absent: what a remote engine's workspace snapshot may hold. */
export const DEFAULT_SNAPSHOT_MAX_MB = 200;

export const RUNTIME_NAMES = ['podman', 'docker'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];

export const SANDBOX_BACKENDS = ['auto', 'container', 'wasm'] as const;
export type SandboxBackend = (typeof SANDBOX_BACKENDS)[number];

export const sandboxConfigSchema = z
  .object({
    /** Where code runs: a container ("container"), WebAssembly ("wasm"), or a container when one can run here, else WebAssembly ("auto"). */
    backend: z.enum(SANDBOX_BACKENDS).default('auto'),
    runtime: z.enum(['auto', ...RUNTIME_NAMES]).default('auto'),
    /** Order tried by `auto`. */
    runtimeOrder: z.array(z.enum(RUNTIME_NAMES)).min(1).default(['podman', 'docker']),
    image: z
      .string()
      .min(1)
      .regex(/^[^\s-][^\s]*$/, 'must be an image reference')
      .default('python:3.14-slim'),
    memory: memorySize.default('512m'),
    cpus: z.number().positive().max(64).default(1),
    pids: z.number().int().min(8).max(65536).default(128),
    tmpSize: memorySize.default('64m'),
    timeoutSeconds: z.number().positive().max(86400).default(30),
    maxTimeoutSeconds: z.number().positive().max(86400).default(300),
    /** Seconds an interrupted run gets to stop before its container is killed. */
    interruptGraceSeconds: z.number().positive().max(60).default(2),
    idleSeconds: z
      .number()
      .positive()
      .max(7 * 86400)
      .default(600),
    maxSessions: z.number().int().min(1).max(64).default(4),
    /** Keep one container started ahead, so a new session's first run is warm. */
    prewarm: z.boolean().default(true),
    /** Characters of stdout (and, separately, stderr) kept per run: head and tail. */
    maxOutputChars: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(256 * 1024),
    /**
     * Characters of output (stdout, stderr, value and error together) a run's result hands the
     * model, in each of its forms (text, structured): head and tail kept, the cut said.
     */
    resultChars: z.number().int().min(1000).max(200_000).default(20_000),
    extraRunArgs: extraRunArgs.default([]),
    /** Full paths of the runtimes' executables, when they are neither on PATH nor where they usually install. */
    podmanPath: executablePath.optional(),
    dockerPath: executablePath.optional(),
    /**
     * The podman system connection and the docker context every CLI call uses (`--connection`,
     * `--context`); unset: the CLI's own choice (CONTAINER_HOST, DOCKER_HOST, the default one).
     */
    podmanConnection: engineName.optional(),
    dockerContext: engineName.optional(),
    /**
     * The OCI runtime containers run under (default: the runtime's own, e.g. runc or crun):
     * "runsc" runs each sandbox in gVisor's user-space kernel. A name the runtime knows (Docker:
     * one its daemon has registered) or an absolute path; never a shell line.
     */
    ociRuntime: ociRuntime.optional(),
    /** "missing": pull the image on first use when it is not present; "never" (default): say how to pull it. */
    pull: z
      .enum(['never', 'missing'])
      .default('never')
      .meta({ cliOnly: 'VS Code asks instead: when the image is missing, its Pull button pulls it.' }),
    /**
     * Host folders mounted read-only, noexec, nosuid, nodev: one folder at /workspace, several
     * (a list) at /workspace/<name>; only with access "read-only" (default "none": nothing
     * mounted). Checked again (realpath, a directory, not "/" or the state dir) each time a
     * container starts.
     */
    workspace: z
      .object({
        path: z.union([workspacePath, z.array(workspacePath).min(1).max(MAX_WORKSPACE_FOLDERS)]),
        access: z.enum(['none', 'read-only']).default('none'),
        /**
         * On an engine that does not share this machine's files (a remote one), the folders are
         * copied in as a snapshot instead of mounted: at most this many MB of files (default 200),
         * else the snapshot is refused and runs go on without /workspace.
         */
        snapshotMaxMB: z.number().int().min(1).max(4096).optional(),
      })
      .strict()
      .optional(),
    /**
     * pip requirements baked into a derived image (`build-image`); runs use that image once it is
     * built for the current base image and list, and the base image until then.
     */
    packages: packageList.default([]),
    /** What sandboxed code may reach through the bridge's HTTP proxy (nothing by default). */
    network: networkConfig.default(() => networkConfig.parse({})),
    /** The index the build installs from (pip's default when absent). */
    pipIndexUrl: z
      .string()
      .superRefine((url, ctx) => {
        const problem = indexUrlProblem(url);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
  })
  .strict()
  .refine((s) => s.timeoutSeconds <= s.maxTimeoutSeconds, {
    message: 'timeoutSeconds must not exceed maxTimeoutSeconds',
    path: ['timeoutSeconds'],
  });

export type SandboxConfig = z.infer<typeof sandboxConfigSchema>;

/** The sandbox settings with every default filled in. */
export function defaultSandboxConfig(overrides: Partial<SandboxConfig> = {}): SandboxConfig {
  return sandboxConfigSchema.parse(overrides);
}

// ---- proxied MCP servers: Claude Desktop's `mcpServers` and VS Code's mcp.json `servers` ----

const serverCommon = {
  enabled: z.boolean().default(true),
  description: z.string().max(2000).optional().describe('Shown to the agent in discovered_servers().'),
  /** Only these tools may be called (names as the server lists them); all when absent. */
  allowTools: z.array(z.string().min(1)).optional().describe('Only these tools may be called.'),
  /** These tools may never be called; wins over allowTools. */
  denyTools: z.array(z.string().min(1)).default([]).describe('These tools may never be called.'),
  /** Permit an entry that starts this bridge again (normally refused: it would recurse). */
  allowSelfProxy: z
    .boolean()
    .default(false)
    .describe('Permit an entry that starts this bridge again (normally refused: it would recurse).'),
  /**
   * Which calls ask the user first (by elicitation to the bridge's client): "destructive" (tools
   * annotated destructiveHint: true), "all", or "none". Read-only tools never ask unless in confirmTools.
   */
  confirm: z
    .enum(['destructive', 'all', 'none'])
    .default('destructive')
    .describe(
      "Which of this server's tool calls ask you first: destructive (tools annotated destructiveHint), all, or none. Read-only tools never ask unless listed in confirmTools.",
    ),
  /** Tools that always ask, whatever `confirm` says. */
  confirmTools: z.array(z.string().min(1)).default([]).describe('Tools that always ask you before a call.'),
  /** Seconds a confirmation waits for an answer; then the call is declined. */
  confirmTimeoutSeconds: z
    .number()
    .positive()
    .max(600)
    .default(120)
    .describe('Seconds a confirmation waits for your answer before the call is declined.'),
};

export const stdioServerSchema = z
  .object({
    type: z.literal('stdio').optional().describe('Transport. Inferred from command/url when absent.'),
    command: z.string().min(1).describe('Command that starts a stdio server.'),
    args: z.array(z.string()).default([]),
    env: z
      .record(z.string(), z.string())
      .default({})
      .describe('Environment for this server only (never the sandbox). Keep secrets out: use the Set Server Secret command.'),
    cwd: z.string().min(1).optional(),
    ...serverCommon,
  })
  .passthrough();

/**
 * OAuth for an HTTP server (MCP authorization): a client id registered with its authorization
 * server (else dynamic registration), its secret only as a reference to a stored secret
 * (`${input:ID}`) or an environment variable (`${env:NAME}`), never written in the settings.
 */
export const oauthConfigSchema = z
  .object({
    clientId: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .describe('A client id registered with the authorization server (default: dynamic registration).'),
    clientSecret: z
      .string()
      .regex(
        /^\$\{(input|env):[A-Za-z0-9_.-]{1,128}\}$/,
        'must be a reference: "${input:ID}" (a stored secret) or "${env:NAME}", not the secret itself',
      )
      .optional()
      .describe('Only a reference: ${input:ID} (a stored secret) or ${env:NAME}.'),
    scopes: z
      .array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/, 'must be one OAuth scope (no spaces or quotes)'))
      .max(64)
      .default([]),
    /** The loopback redirect port (default: a free port, kept while the registration is); for clients registered with a fixed redirect URI. */
    callbackPort: z
      .number()
      .int()
      .min(1024)
      .max(65535)
      .optional()
      .describe('Fixed loopback port of the redirect (http://127.0.0.1:PORT/callback).'),
    /** Seconds the browser step waits for the sign-in. */
    signInTimeoutSeconds: z.number().positive().max(3600).default(300),
    /** A client ID metadata document the user hosts: its URL is the client_id where the authorization server takes one. */
    clientMetadataUrl: z
      .url({ protocol: /^https$/ })
      .max(2048)
      .refine((u) => new URL(u).pathname !== '/', 'must be an https URL with a path (the client ID metadata document)')
      .optional()
      .describe(
        'https URL of a client ID metadata document you host, used as the client id where the authorization server supports it (default: dynamic registration).',
      ),
  })
  .strict()
  .refine((o) => !o.clientSecret || o.clientId, { message: 'clientSecret needs clientId', path: ['clientSecret'] })
  .refine((o) => !(o.clientId && o.clientMetadataUrl), {
    message: 'give clientId or clientMetadataUrl, not both',
    path: ['clientMetadataUrl'],
  });
export type OAuthConfig = z.infer<typeof oauthConfigSchema>;

export const httpServerSchema = z
  .object({
    type: z
      .enum(['http', 'sse', 'streamable-http', 'streamableHttp'])
      .optional()
      .describe('Transport. Inferred from command/url when absent.'),
    url: z.url({ protocol: /^https?$/ }).describe('Streamable HTTP (or SSE) endpoint.'),
    headers: z.record(z.string(), z.string()).default({}),
    /** The MCP authorization flow on a 401 (on unless false, or an Authorization header is set). */
    oauth: z
      .union([z.literal(false), oauthConfigSchema])
      .optional()
      .describe('OAuth sign-in (MCP authorization) for an HTTP server; on by default unless false or an Authorization header is set.'),
    ...serverCommon,
  })
  .passthrough();

export const serverSchema = z.union([stdioServerSchema, httpServerSchema], {
  error: 'a server needs either "command" (stdio) or "url" (HTTP)',
});
export type ServerConfig = z.infer<typeof serverSchema>;
export type StdioServerConfig = z.infer<typeof stdioServerSchema>;
export type HttpServerConfig = z.infer<typeof httpServerSchema>;

/** Server names become Python identifiers and file names: keep them plain. */
export const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const serversSchema = z.record(
  z.string().regex(SERVER_NAME, 'server names are 1-64 letters, digits, "_", "-" or "." and start with a letter or digit'),
  serverSchema,
);

const MiB = 1024 * 1024;

export const proxyConfigSchema = z
  .object({
    connectTimeoutSeconds: z.number().positive().max(600).default(60),
    listTimeoutSeconds: z.number().positive().max(600).default(30),
    callTimeoutSeconds: z.number().positive().max(86400).default(300),
    /** Bytes of one message a server may send (a tool result, a page of its tool list): over it, its connection is closed. */
    maxResultBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(256 * MiB)
      .default(10 * MiB),
    /** Bytes of a tool call's arguments (as JSON) that sandboxed code may send. */
    maxArgumentBytes: z
      .number()
      .int()
      .min(1024)
      .max(256 * MiB)
      .default(4 * MiB),
    /** Tools kept of one server's list; the rest are left out, and the log says so. */
    maxToolsPerServer: z.number().int().min(1).max(10_000).default(1000),
    /** Bytes of one server's tool list (as JSON) kept. */
    maxToolListBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(256 * MiB)
      .default(4 * MiB),
    /** Bytes of one tool as listed (name, description, schemas); a bigger tool is left out. */
    maxToolSchemaBytes: z
      .number()
      .int()
      .min(1024)
      .max(16 * MiB)
      .default(64 * 1024),
    /**
     * Seconds search_tool_docs() and discovered_servers() wait, in all, for servers still
     * starting (off the run's clock); then they answer with what is known and name the rest.
     */
    discoveryWaitSeconds: z.number().min(0).max(120).default(10),
    /** Notifications (and requests) a server may send per second; the excess is dropped. */
    maxNotificationsPerSecond: z.number().int().min(1).max(100_000).default(100),
    /** Resources, resource templates or prompts of proxied servers the bridge lists to its own client (all servers together); the rest are left out. */
    maxListedItems: z.number().int().min(1).max(100_000).default(1000),
    /**
     * Seconds a proxied server's request to the bridge's client (roots, elicitation, sampling)
     * waits for its answer; then it fails. A run waiting on it has its clock paused meanwhile.
     */
    relayTimeoutSeconds: z.number().positive().max(3600).default(120),
    /** Bytes (as JSON) of one such request's parameters (sampling messages, elicitation schema); a bigger one is refused. */
    maxRelayBytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * MiB)
      .default(1 * MiB),
    /** Elicitations and sampling requests of one server waiting for an answer at once; more are refused at once. */
    maxPendingRelaysPerServer: z.number().int().min(1).max(64).default(2),
    /** Elicitations and sampling requests relayed for one run_python run (all servers together); more are refused. */
    maxRelaysPerRun: z.number().int().min(1).max(10_000).default(20),
  })
  .strict();
export type ProxyConfig = z.infer<typeof proxyConfigSchema>;

/** The run log in the state dir (the audit record) and the images beside it. */
export const runLogConfigSchema = z
  .object({
    /** Size at which runs.jsonl is rotated. */
    maxFileBytes: z
      .number()
      .int()
      .min(4096)
      .max(1024 * 1024 * 1024)
      .default(10 * 1024 * 1024),
    /** Rotated files kept: runs.1.jsonl ... runs.<keepFiles>.jsonl. */
    keepFiles: z.number().int().min(1).max(100).default(5),
    /** All stored images together; the oldest are pruned first. */
    maxImageBytes: z
      .number()
      .int()
      .min(0)
      .max(64 * 1024 * 1024 * 1024)
      .default(256 * 1024 * 1024),
    /** Images stored of one run; the rest are listed (type, size) but not stored. */
    maxImageBytesPerRun: z
      .number()
      .int()
      .min(0)
      .max(1024 * 1024 * 1024)
      .default(32 * 1024 * 1024),
    /** Tool calls of one run logged in full; the rest are summed up in one line (counts per tool). */
    fullToolCallsPerRun: z.number().int().min(0).max(1_000_000).default(100),
    /** Bytes of one run's tool-call lines logged in full; the rest are summed up. */
    maxToolCallBytesPerRun: z
      .number()
      .int()
      .min(0)
      .max(1024 * 1024 * 1024)
      .default(1024 * 1024),
  })
  .strict();
export type RunLogConfig = z.infer<typeof runLogConfigSchema>;

/**
 * Servers that start only once the user allows their definition (in VS Code: those a workspace
 * defines). The extension writes the decisions file; the bridge reads it whenever it needs one
 * of these servers, so a decision takes effect without a restart, and asks for decisions in the
 * requests file, which the extension watches.
 */
export const consentConfigSchema = z
  .object({
    decisionsFile: z.string().min(1),
    requestsFile: z.string().min(1),
    /** Server name -> the hash of its definition, as the decisions name it. */
    servers: z.record(z.string().regex(SERVER_NAME), z.string().regex(/^[0-9a-f]{16,64}$/, 'must be a hex hash')).default({}),
  })
  .strict();
export type ConsentConfig = z.infer<typeof consentConfigSchema>;

/** Roots the configuration may name. */
export const MAX_CONFIG_ROOTS = 64;
/** A root: an absolute folder path or a file:// URI (what MCP's roots are). */
const rootSchema = z
  .string()
  .min(1)
  .max(4096)
  .refine((r) => (r.startsWith('file://') ? URL.canParse(r) : isAbsolute(r) || win32.isAbsolute(r)), {
    message: 'must be an absolute folder path or a file:// URI',
  });

export const configSchema = z
  .object({
    servers: serversSchema.optional(),
    mcpServers: serversSchema.optional().meta({
      cliOnly: "Claude Desktop's name for `servers`, for its configuration files; in VS Code the servers are codeExecutionMode.servers.",
    }),
    sandbox: sandboxConfigSchema.default(() => sandboxConfigSchema.parse({})),
    proxy: proxyConfigSchema.default(() => proxyConfigSchema.parse({})),
    runLog: runLogConfigSchema.default(() => runLogConfigSchema.parse({})),
    stateDir: z.string().min(1).default('~/.code-execution-mode').meta({
      cliOnly:
        "The extension keeps its state in its own storage folder (`state` in the extension's global storage), shared by its windows.",
    }),
    /** What `${workspaceFolder}` means in server entries (the CLI uses --workspace or its cwd). */
    workspaceFolder: z.string().min(1).optional().meta({ cliOnly: "The extension sets it: the window's first folder." }),
    /**
     * A workspace's snippets folder (`.vscode/code-execution-mode/snippets`), read besides
     * `<stateDir>/snippets`; only when set (the extension sets it in trusted workspaces only).
     */
    workspaceSnippetsDir: z
      .string()
      .min(1)
      .optional()
      .meta({ cliOnly: "The extension sets it to the window's .vscode/code-execution-mode/snippets, in trusted workspaces only." }),
    consent: consentConfigSchema
      .optional()
      .meta({ cliOnly: 'Written by the extension from the decisions the user makes about what a workspace defines.' }),
    /**
     * Folders (absolute paths or file:// URIs) proxied servers get as their roots when the
     * bridge's client declares no roots of its own (a client's roots, e.g. VS Code's workspace
     * folders, win).
     */
    roots: z
      .array(rootSchema)
      .max(MAX_CONFIG_ROOTS)
      .optional()
      .meta({ cliOnly: "VS Code, as the bridge's client, gives its workspace folders as roots, which win." }),
    /**
     * Whether run_python declares an outputSchema and returns structuredContent beside its text.
     * A client that hands the model structuredContent alone (VS Code does) gets the run as
     * escaped JSON, longer and harder to read than the text: off, it gets the text only.
     */
    structuredResults: z.boolean().default(true).meta({
      cliOnly:
        'VS Code hands the model the JSON of structuredContent alone when a result has one; the extension turns it off so the model reads the text.',
    }),
    /** JSON schema reference some editors add; ignored. */
    $schema: z.string().optional().meta({ cliOnly: 'A JSON schema reference some editors add to a file; ignored.' }),
  })
  .strict()
  .refine((c) => !(c.servers && c.mcpServers), { message: 'use either "servers" or "mcpServers", not both', path: ['mcpServers'] })
  .transform(({ servers, mcpServers, $schema: _schema, ...rest }) => ({ ...rest, servers: servers ?? mcpServers ?? {} }));

export type Config = z.output<typeof configSchema>;

/**
 * Keys of the configuration that have no VS Code setting, and why: the dotted path and the
 * reason given as `.meta({ cliOnly })` beside the key above. Every other key has a setting
 * (extension/settings/manifest-settings.ts says which; a unit test checks that each key has one or the other).
 */
export function cliOnlyKeys(): Record<string, string> {
  const groups: Array<[string, Record<string, z.ZodType>]> = [
    ['', configSchema.in.shape],
    ['sandbox.', sandboxConfigSchema.shape],
    ['proxy.', proxyConfigSchema.shape],
    ['runLog.', runLogConfigSchema.shape],
  ];
  const keys: Record<string, string> = {};
  for (const [prefix, shape] of groups) {
    for (const [key, schema] of Object.entries(shape)) {
      const reason = schema.meta()?.cliOnly;
      if (typeof reason === 'string') keys[prefix + key] = reason;
    }
  }
  return keys;
}
