// The bridge: an MCP server with one tool (run_python) and a capability resource, wired to
// the sandbox, the proxy hub and the run log. Runs over stdio for VS Code or any MCP client.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { RootsListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { SandboxBackend } from '../config/schema.ts';
import type { ConfigWithSecrets } from '../config/secrets.ts';
import { redactUrlSecrets } from '../config/url-secrets.ts';
import {
  distributionsText,
  forbiddenMountDirs,
  imageDistributions as checkedDistributions,
  imageIdAtStart,
  type ImageDistributions,
  mountsText,
  PACKAGES_RECHECK_MS,
  type PackagesState,
  resolveWorkspaceMounts,
  type EgressHandler,
  type Sandbox,
  type SandboxTier,
  SessionManager,
  targetText,
  workspaceRequested,
} from '../sandbox/index.ts';
import { BridgeClientRelay } from './client/relay.ts';
import { ConfirmationGate, clientAsker } from './client/confirmations.ts';
import { NetworkGrants, networkHandler } from './client/network-questions.ts';
import { createHostMethods, recordRefusedRequest, type HostMethods } from './sandbox-api/host-methods.ts';
import { exposeProxied, type Exposure } from './client/exposure.ts';
import {
  buildHintFor,
  imagePackagesText,
  installedNames,
  installedSentence,
  packagesAtStart,
  packagesText,
  type PackagesFacts,
} from './tool/packages-status.ts';
import { SnippetStore, snippetDirs } from '../state/snippets.ts';
import { IMAGE_PACKAGES_FILE, rememberImagePackages, rememberedImagePackages, rememberedUnderName } from '../state/image-packages-file.ts';
import type { ServerLogMessage } from './proxy/connection.ts';
import { ProxyHub } from './proxy/hub.ts';
import { RunLog } from '../state/run-log/writer.ts';
import { registerRunPython, RUN_PYTHON, runPythonDescription } from './tool/run-python.ts';
import { ListedMcpServer, listedText, ListingNotice } from './tool/listing-notice.ts';
import { preludeCode, preludeUpdateCode } from './sandbox-api/prelude.ts';
import { serverInstructions } from './server-instructions.ts';
import { watchConfigFile } from './config-reload.ts';
import { SessionsWithState, takeRestart } from '../state/bridge-restarts.ts';
import { OWNER_ENV } from '../state/catalog-file.ts';
import { clip } from '../shared/clip.ts';
import { networkLine } from '../config/network-summary.ts';
import { BridgeStdioTransport } from './stdio-transport.ts';
import type { RunCall } from './run-call.ts';

export const BRIDGE_NAME = 'code-execution-mode';
export const BRIDGE_VERSION = '0.1.0';
export const CAPABILITIES_URI = 'code-execution-mode://capabilities';
/** How long a bridge's start waits for the image's first container to say what it has. */
export const IMAGE_KNOWN_WAIT_MS = 10_000;
/** How long the look-up of the image's ID at start may take per runtime. */
const IMAGE_ID_TIMEOUT_MS = 5_000;

export interface Bridge {
  server: McpServer;
  hub: ProxyHub;
  /** Whatever runs the code: the bridge knows it only through this seam. */
  sandbox: Sandbox;
  runLog: RunLog;
  /** Each run's request handler (the CLI's `run` uses it too). */
  requests: HostMethods;
  /** Each run's answers about its network requests (sandbox.network): questions to the client, lines of the run log. */
  egress(run: Pick<RunCall, 'signal' | 'session'>): EgressHandler;
  /**
   * Applies a changed configuration's servers, proxy settings and result sizes without a
   * restart (the sessions keep their variables); the rest of it needs a new bridge and is not
   * read (config/restart-keys.ts says which is which).
   */
  reconfigure(next: ConfigWithSecrets): Promise<void>;
  /**
   * Settles what the listing says of the image's packages before a client reads it: what was
   * remembered of the image (under its name at once, else by its ID), else its first
   * container's report, waited for at most `maxWaitMs` (the first run then uses that container).
   */
  imageKnown(maxWaitMs?: number): Promise<void>;
  /** Told of each session a run used (it may hold state now). */
  onSessionUsed: ((session: string) => void) | undefined;
  close(): Promise<void>;
}

/** Set by the VS Code extension on the bridge it defines, so that fixes name its commands. */
export const CLIENT_ENV = 'CODE_EXECUTION_MODE_CLIENT';

/** How a user pulls a missing sandbox image where this bridge runs. */
export function pullHintFor(client: string | undefined): string | undefined {
  return client === 'vscode'
    ? 'Tell the user to run the VS Code command "Code Execution Mode: Prepare Sandbox Image" (or click the sandbox item in the status bar); it pulls the image once, with progress. Then run the code again.'
    : undefined;
}

export async function createBridge(
  config: ConfigWithSecrets,
  rawLog: (message: string) => void = () => {},
  options: { pullHint?: string; awaitClient?: boolean } = {},
): Promise<Bridge> {
  // Every line of the bridge's log (its stderr) without the credentials of any URL in it.
  const log = (message: string) => rawLog(redactUrlSecrets(message));
  // The MCP server is created once the proxied servers are known (its instructions name them);
  // what the hub and the relay need of it before then is reached through this.
  let server: McpServer | undefined;
  // Proxied servers' log messages (rate-limited per server by the hub) go to the bridge's log
  // and, as the bridge's own logging messages, to its client (at the level it set).
  const serverLog = (name: string, message: ServerLogMessage) => {
    const data = cappedLogData(message.data);
    log(
      `server ${name} [${message.level}]${message.logger ? ` ${message.logger}` : ''}: ${typeof data === 'string' ? data : JSON.stringify(data)}`,
    );
    if (!server?.isConnected()) return;
    void server
      .sendLoggingMessage({ level: message.level, logger: message.logger ? `${name}/${message.logger}` : name, data })
      .catch(() => undefined);
  };
  const clientServer = (): Server => {
    if (!server) throw new Error('the bridge has no client yet');
    return server.server;
  };
  // A workspace mount that names a missing folder, a root, home or the state dir is refused:
  // said in the log, and the bridge runs without it (the sandbox check says why too).
  if (workspaceRequested(config.sandbox)) {
    try {
      log(`workspace, read-only: ${mountsText(resolveWorkspaceMounts(config.sandbox, forbiddenMountDirs(config.stateDir)))}`);
    } catch (error) {
      log(`workspace NOT mounted: ${(error as Error).message}`);
      const { workspace: _refused, ...rest } = config.sandbox;
      config = { ...config, sandbox: rest };
    }
  }
  // sandbox.packages: the listing and instructions say so only when the image with them is built
  // (looked up before the proxied servers start: nothing may await between their start and the server's creation).
  const packagesStart = await packagesAtStart(config.sandbox);
  // What a bridge learned before of the image runs use, found by its key: the packages image's
  // tag, else the image's ID (one `image inspect`, no container). Not awaited here: imageKnown()
  // settles it before the listing is read, at once when the image's name has a memory (a hint,
  // checked against the ID when it comes; a wrong one is corrected by the first container).
  let remembered: ImageDistributions | undefined;
  const containers = config.sandbox.backend !== 'wasm';
  const imageStart = (async () => {
    if (!containers) return { key: undefined };
    const key = packagesStart?.state === 'built' ? packagesStart.tag : await imageIdAtStart(config.sandbox, IMAGE_ID_TIMEOUT_MS);
    return { key, found: key ? await rememberedImagePackages(config.stateDir, key) : undefined };
  })().catch(() => ({ key: undefined, found: undefined }));
  const nameHint =
    containers && packagesStart?.state !== 'built'
      ? rememberedUnderName(config.stateDir, config.sandbox.image).catch(() => undefined)
      : Promise.resolve(undefined);
  if (packagesStart && packagesStart.state !== 'built')
    log(`sandbox.packages: the image with them is not built; runs use ${config.sandbox.image} without them until it is`);
  // Proxied servers' resource and prompt list changes are told to the client (see client/exposure.ts).
  let exposure: Exposure | undefined;
  const serverListChanged = (name: string, kind: 'resources' | 'prompts') => exposure?.listChanged(name, kind);
  // Proxied servers' requests to their client (roots, elicitation, sampling) go to the bridge's.
  // Served to a client, they start only once it initialized, so that they are told what it supports.
  // Kept: reconfigure() sets the new timeout in it, read by each relayed request.
  const relayOptions = {
    roots: config.roots ?? [],
    timeoutMs: config.proxy.relayTimeoutSeconds * 1000,
    log,
    awaitClientMs: options.awaitClient ? config.proxy.connectTimeoutSeconds * 1000 : undefined,
  };
  const relay: BridgeClientRelay = new BridgeClientRelay(clientServer, relayOptions);
  const hub = new ProxyHub(config, {
    stateDir: config.stateDir,
    log,
    serverLog,
    relay: { relay, maxBytes: config.proxy.maxRelayBytes },
    serverListChanged,
  });
  await hub.start();
  // An audit log that cannot be written is said loudly (and in every run_python result), not lost quietly.
  const runLog = new RunLog(config.stateDir, {
    ...config.runLog,
    owner: process.env[OWNER_ENV],
    onProblem: (problem) =>
      log(
        problem
          ? `AUDIT LOG NOT WRITTEN: ${problem}; runs are not recorded until this is fixed`
          : `the run log is written again: ${config.stateDir}`,
      ),
  });
  runLog.check();
  relay.runLog = runLog;
  // Confirmations ask the bridge's own client (the server below, once it is connected).
  const confirmations = new ConfirmationGate(() => clientAsker(clientServer()), runLog);
  // Questions about the sandbox's network ask the same client, in the confirmations' queue.
  const networkQuestions = {
    asker: () => clientAsker(clientServer()),
    queue: confirmations,
    grants: new NetworkGrants(),
    runLog,
    onAlways: (target: { host: string; port: number }) =>
      log(
        process.env[CLIENT_ENV] === 'vscode'
          ? `sandbox.network: the user allowed ${targetText(target)} always; VS Code adds it to codeExecutionMode.sandbox.network.allow`
          : `sandbox.network: the user allowed ${targetText(target)} always; this holds until the bridge stops. To keep it, add "${targetText(target)}" to sandbox.network.allow in the configuration file`,
      ),
  };
  const methods = createHostMethods(
    hub,
    runLog,
    new SnippetStore(snippetDirs(config.stateDir, config.workspaceSnippetsDir)),
    confirmations,
    () => packagesFacts(),
  );
  const preludeServers = () =>
    hub.catalog.records().map((r) => ({ name: r.name, alias: `mcp_${r.alias}`, description: r.description ?? '' }));
  let preludeKey = JSON.stringify(preludeServers());
  const prelude = preludeCode(preludeServers());
  // A packages image built while the bridge runs, or an image found to have packages of its own
  // (numpy in a user's image, learned from its first container): run_python's listing says so
  // from then on, and the client is told the list changed (the instructions are fixed at initialize).
  let listedPackages = installedNames(packagesStart);
  let refreshListing: (() => void) | undefined;
  const packagesBuilt = (state: PackagesState) => {
    const names = installedNames(state);
    if (state.state !== 'built' || names.join('\n') === listedPackages.join('\n')) return;
    listedPackages = names;
    // What was remembered was of the image runs used before.
    remembered = undefined;
    log(`sandbox.packages: the image with them is built (${state.tag}); new sessions use it`);
    refreshListing?.();
  };
  let remembering: Promise<void> | undefined;
  const imageDistributions = (image: string, found: ImageDistributions) => {
    // Said when there is something to say (a run of `code-execution-mode run` keeps a clean stderr).
    if (found.names.length > 0 && found.names.join('\n') !== (remembered?.names ?? []).join('\n'))
      log(`sandbox image ${image}: Python packages ${distributionsText(found, 30, 300)}`);
    // By the image's key (its ID, or the packages image's tag). Awaited by close(): a bridge
    // that exits right after its first run still remembers.
    remembering = rememberImagePackages(config.stateDir, config.sandbox.image, image, found).catch((error: unknown) =>
      log(`${IMAGE_PACKAGES_FILE} not written: ${error instanceof Error ? error.message : String(error)}`),
    );
    refreshListing?.();
  };
  const wasmRuns = () => sandbox.tier()?.isolation === 'wasm' || config.sandbox.backend === 'wasm';
  // The one account of what the image runs use has: its first container's report, else what was
  // remembered of it, else the sandbox.packages built into it; undefined while nothing is known.
  const installed = (): ImageDistributions | undefined =>
    sandbox.imageDistributions() ?? remembered ?? (listedPackages.length > 0 ? checkedDistributions(listedPackages) : undefined);
  const packagesFacts = (): PackagesFacts => ({ installed: installedSentence(installed(), wasmRuns()), canAdd: !wasmRuns() });
  const sandbox = new SessionManager(config.sandbox, {
    onRequest: methods.handle,
    onRefusedRequest: (refused) => recordRefusedRequest(runLog, refused),
    onPackagesBuilt: packagesBuilt,
    onImageDistributions: imageDistributions,
    // "auto" settled on WebAssembly: said in the log, and in the listing from now on.
    onEngine: (engine) => {
      if (engine.kind !== 'wasm') return;
      if (engine.whyNotContainer) log(`sandbox: WebAssembly, since no container can run here: ${engine.whyNotContainer}`);
      // The WebAssembly sandbox mounts no folder: said, not silently dropped.
      if (workspaceRequested(config.sandbox))
        log('workspace NOT mounted: the WebAssembly sandbox has no workspace folder (a container sandbox has)');
      if (config.sandbox.network.allow.length > 0 || config.sandbox.network.ask)
        log('network NOT available: the WebAssembly sandbox has no network, whatever sandbox.network allows (a container sandbox has)');
      refreshListing?.();
    },
    detect: { stateDir: config.stateDir },
    prelude,
    onPullProgress: log,
    ...(options.pullHint ? { pullHint: options.pullHint } : {}),
  });
  // Its tools/list_changed goes through the listing notice below.
  const listed = new ListedMcpServer(
    { name: BRIDGE_NAME, version: BRIDGE_VERSION },
    // The servers as known at start (cached tool lists included); the listing itself never grows.
    // logging: proxied servers' log messages are relayed as the bridge's.
    {
      capabilities: { logging: {} },
      instructions: serverInstructions(
        hub.catalog.records(),
        (name) => hub.consentState(name) === 'allowed',
        installedNames(packagesStart),
        // As at start (instructions are read once); the listing and capabilities follow changes.
        wasmRuns() ? '' : networkLine(config.sandbox.network),
      ),
    },
  );
  server = listed;
  // The client's roots changed: every proxied server told of roots is told too.
  server.server.setNotificationHandler(RootsListChangedNotificationSchema, () => hub.rootsChanged());
  let sessionUsed: ((session: string) => void) | undefined;
  const runPython = registerRunPython(server, config.sandbox, {
    structured: config.structuredResults,
    installedPackages: installed(),
    sandbox,
    hub,
    runLog,
    requests: methods,
    log,
    onSessionUsed: (session) => sessionUsed?.(session),
    egress: (run) => networkHandler(networkQuestions, run),
  });
  // The client is told of a new listing once it initialized, once per burst, and only when what
  // tools/list gives differs from what it had (a new server, a no-op reload: nothing to tell).
  const listing = new ListingNotice({ render: () => listedText(RUN_PYTHON, runPython), send: () => listed.sendToolListChangedNow() });
  listed.notice = listing;
  server.server.oninitialized = () => {
    relay.markInitialized();
    listing.initialized();
  };
  // The capability resource first, then the proxied servers' resources, templates and prompts.
  // These handlers are the server's only resource and prompt handlers: add the bridge's own through `own`
  // (McpServer.registerResource/registerPrompt would refuse to install theirs).
  // Kept: reconfigure() sets the new cap in it, read by each listing.
  const exposureOptions = {
    hub,
    runLog,
    log,
    maxListedItems: config.proxy.maxListedItems,
    own: [
      {
        uri: CAPABILITIES_URI,
        name: 'capabilities',
        description: 'The proxied servers and the Python API of the sandbox',
        mimeType: 'text/markdown',
        text: () =>
          capabilityText(
            hub,
            [
              sandboxText(sandbox.tier(), config.sandbox.backend),
              imagePackagesText(installed(), wasmRuns()),
              wasmRuns() ? '' : packagesText(sandbox.packages() ?? packagesStart, buildHintFor(process.env[CLIENT_ENV])),
            ]
              .filter(Boolean)
              .join('\n\n'),
            wasmRuns() ? '' : networkLine(config.sandbox.network),
          ),
      },
    ],
  };
  exposure = exposeProxied(server, exposureOptions);
  // Updated only when the text or the sandbox.packages names change (the client is told only when
  // its listing changed, by the notice above): later containers of an image change nothing (its
  // distributions are learned once).
  const listedDescription = () => runPythonDescription(config.sandbox, installed(), wasmRuns());
  let listedKey = `${listedDescription()}\n${listedPackages.join(',')}`;
  refreshListing = () => {
    const description = listedDescription();
    const key = `${description}\n${listedPackages.join(',')}`;
    if (key === listedKey) return;
    listedKey = key;
    runPython.update({ description });
  };
  // What was remembered of the image's ID, unless its first container has said already.
  let keyLooked = false;
  void imageStart.then(({ found }) => {
    keyLooked = true;
    if (!found || sandbox.imageDistributions()) return;
    remembered = found;
    refreshListing?.();
  });
  const imageKnown = async (maxWaitMs = IMAGE_KNOWN_WAIT_MS) => {
    const hint = await nameHint;
    if (hint && !keyLooked && !sandbox.imageDistributions()) {
      remembered = hint;
      refreshListing?.();
      return;
    }
    const { key, found } = await imageStart;
    // Known already, or nothing to wait for (no such image here: the check says why, at the first run).
    if (found || remembered || !key || sandbox.imageDistributions()) return;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, maxWaitMs)));
    // The check starts the sandbox's first container (prewarm may have started it already): its
    // `ready` frame says what the image has, and the first run uses that container.
    await Promise.race([
      sandbox.check().then(
        () => undefined,
        () => undefined,
      ),
      waited,
    ]);
    clearTimeout(timer);
  };
  // Looked for without a run too (once the runtime is known), until it is there.
  const packagesWatch =
    packagesStart?.state === 'missing'
      ? setInterval(() => {
          void sandbox.recheckPackages().then((state) => {
            if (state?.state === 'built') clearInterval(packagesWatch);
          });
        }, PACKAGES_RECHECK_MS)
      : undefined;
  packagesWatch?.unref();
  const reconfigure = async (next: ConfigWithSecrets) => {
    // Shared by the sessions and run_python: the next run's output is cut and shaped by these.
    config.sandbox.resultChars = next.sandbox.resultChars;
    config.sandbox.maxOutputChars = next.sandbox.maxOutputChars;
    // The sandbox's network: the proxy reads it from the sandbox's configuration (this object) at each request.
    if (process.env[CLIENT_ENV] === 'vscode' && JSON.stringify(next.sandbox.network.allow) !== JSON.stringify(config.sandbox.network.allow))
      networkQuestions.grants.forgetAlways();
    config.sandbox.network = next.sandbox.network;
    relayOptions.timeoutMs = next.proxy.relayTimeoutSeconds * 1000;
    exposureOptions.maxListedItems = next.proxy.maxListedItems;
    await hub.reconfigure(next);
    // Sessions learn the new servers before their next run (new ones from the start).
    const servers = preludeServers();
    const key = JSON.stringify(servers);
    if (key !== preludeKey) {
      preludeKey = key;
      sandbox.setPrelude(preludeCode(servers), preludeUpdateCode(servers));
    }
    // The client is told of a new listing only when its text changed.
    refreshListing?.();
  };
  let closing: Promise<void> | undefined;
  return {
    server,
    hub,
    sandbox,
    runLog,
    requests: methods,
    egress: (run) => networkHandler(networkQuestions, run),
    reconfigure,
    imageKnown,
    set onSessionUsed(listener: ((session: string) => void) | undefined) {
      sessionUsed = listener;
    },
    get onSessionUsed() {
      return sessionUsed;
    },
    close: () =>
      (closing ??= (async () => {
        clearInterval(packagesWatch);
        listing.close();
        exposure?.close();
        await Promise.allSettled([sandbox.close(), hub.close(), remembering]);
        runLog.close();
        await server.close().catch(() => undefined);
      })()),
  };
}

/** The most characters of a proxied server's log message relayed (as JSON for non-strings). */
const MAX_LOG_DATA_CHARS = 4000;

function cappedLogData(data: unknown): unknown {
  if (typeof data === 'string') return clip(data, MAX_LOG_DATA_CHARS);
  let json: string;
  try {
    json = JSON.stringify(data) ?? 'null';
  } catch {
    return '(a log message that is not JSON)';
  }
  return json.length > MAX_LOG_DATA_CHARS ? clip(json, MAX_LOG_DATA_CHARS) : data;
}

/** `network`: sandbox.network in one line (config/network-summary.ts); '' or absent: no network. */
export function capabilityText(hub: ProxyHub, packages?: string, network?: string): string {
  const lines = ['# Code Execution Mode', '', 'Proxied MCP servers, callable from run_python as `await mcp_<alias>.<tool>(**kwargs)`:', ''];
  for (const record of hub.catalog.records()) {
    const consent = hub.consentState(record.name);
    if (consent !== 'allowed') {
      lines.push(`- \`mcp_${record.alias}\` (${record.name}): ${record.description ?? ''} [${consent}] ${hub.consentReason(record.name)}`);
      continue;
    }
    const tools = record.tools ? `${record.tools.length} tools` : 'tools not listed yet';
    lines.push(
      `- \`mcp_${record.alias}\` (${record.name}): ${record.description ?? ''} [${record.state}; ${tools}]${record.error ? ` ${record.error}` : ''}`,
    );
    // The server's own words, quoted as its own (untrusted: cleaned and capped by the catalog).
    if (record.instructions) lines.push(...record.instructions.split('\n').map((line) => `  > ${line}`));
  }
  if (hub.catalog.records().length === 0) lines.push('- none configured');
  lines.push(
    '',
    'Python API: `await call_tool(server, tool, {...})`, `discovered_servers()`, `await search_tool_docs(query, limit=5, detail="summary")`,',
    '`await query_tool_docs(server, tool=None, detail="summary")`, `help(mcp_<alias>.<tool>)`, `from mcp import runtime`, `ToolError`,',
    '`await list_resources(server)`, `await read_resource(server, uri)`, `await list_resource_templates(server)`, `await list_prompts(server)`,',
    `\`await get_prompt(server, name, arguments)\`, \`emit_image(png_bytes)\` (open matplotlib figures are sent too). ${network ? 'The sandbox reaches only what sandbox.network allows (below)' : 'The sandbox has no network'}; /work and /tmp are writable;`,
    "files written under /work/out come back with the result; the user's folder is at /workspace (several: /workspace/<name>), read-only, only when sandbox.workspace mounts it.",
  );
  if (packages) lines.push('', packages);
  if (network) lines.push('', network);
  return lines.join('\n');
}

/** Which sandbox runs the code, for the capabilities resource: the kind's limits differ. */
export function sandboxText(tier: SandboxTier | undefined, backend: SandboxBackend): string {
  if (tier?.isolation === 'wasm' || (!tier && backend === 'wasm'))
    return (
      'Sandbox: WebAssembly (Python compiled to WebAssembly, in a process with no access to files, network or environment). ' +
      'Not here: subprocesses, packages beyond the standard library, the workspace folder; a container sandbox (Podman or Docker) has them.'
    );
  if (!tier) return '';
  return `Sandbox: a ${tier.runtime} container${tier.isolation === 'gVisor' ? ' in gVisor' : ''}.`;
}

/**
 * A VS Code window's bridge: the sessions its previous bridge had are told, on their first run,
 * that they were reset and why; this bridge's own are recorded for the next one.
 */
async function carryOverSessions(bridge: Bridge, stateDir: string, log: (message: string) => void): Promise<void> {
  const owner = process.env[OWNER_ENV];
  if (!owner) return;
  const previous = await takeRestart(stateDir, owner);
  if (previous) {
    bridge.sandbox.markReset(previous.sessions, { kind: 'reset', reason: previous.reason });
    log(`sessions of the previous bridge (${previous.sessions.join(', ')}) are told on their next run: ${previous.reason}`);
  }
  const withState = new SessionsWithState(stateDir, owner, log);
  bridge.onSessionUsed = (session) => withState.add(session);
}

/**
 * Serves the bridge on stdin/stdout until the client goes away or a signal arrives. With
 * `configFile`, changes to the file (or to the sealed secrets file) are applied while it runs
 * (`load` reads them as at start).
 */
export async function serveStdio(
  config: ConfigWithSecrets,
  log: (message: string) => void,
  configFile?: { file: string; secretsFile?: string | undefined; load: () => Promise<ConfigWithSecrets> },
): Promise<void> {
  const pullHint = pullHintFor(process.env[CLIENT_ENV]);
  const bridge = await createBridge(config, log, { ...(pullHint ? { pullHint } : {}), awaitClient: true });
  const reload = configFile && watchConfigFile({ ...configFile, running: config, apply: (next) => bridge.reconfigure(next), log });
  await carryOverSessions(bridge, config.stateDir, log);
  // Ours, not the SDK's: an oversized, malformed or batched message is answered and the bridge carries on.
  const transport = new BridgeStdioTransport(log);
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    log(`shutting down: ${why}`);
    reload?.close();
    await bridge.close();
    process.exit(0);
  };
  // The stdio transport does not end on stdin EOF: without this, every client disconnect
  // would leave proxied servers and containers behind.
  process.stdin.on('end', () => void stop('stdin ended'));
  process.stdin.on('close', () => void stop('stdin closed'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => void stop('SIGHUP'));
  transport.onclose = () => void stop('transport closed');
  // Start a sandbox ahead of the first run_python call; a missing runtime shows up there. What
  // the image has is settled before the client can read the listing (the same first container).
  void bridge.sandbox.prewarm();
  await bridge.imageKnown();
  await bridge.server.connect(transport);
  log(`serving on stdio with ${bridge.hub.catalog.names().length} proxied servers; state in ${config.stateDir}`);
}
