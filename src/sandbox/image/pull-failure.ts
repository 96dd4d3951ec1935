// What a failed pull most likely means, from the runtime's last words: the raw text ("dial tcp:
// lookup registry: no such host") tells a person little, so the cause and its fix are added.

interface Cause {
  match: RegExp;
  cause: string;
  fix: string;
}

// Most specific first: a proxy or certificate failure also mentions the connection.
const CAUSES: Cause[] = [
  {
    match: /proxyconnect|proxy error|407 Proxy/i,
    cause: 'a proxy refused or broke the connection',
    fix: 'check HTTPS_PROXY and NO_PROXY for the runtime (podman reads them from its environment; Docker from its daemon settings)',
  },
  {
    match: /x509|certificate|tls: failed to verify/i,
    cause: "the registry's certificate is not trusted (a company TLS proxy, often)",
    fix: "add that proxy's CA certificate to the system's trust store, then pull again",
  },
  {
    match: /unauthorized|authentication required|denied: requested access|access denied|\b401\b|\b403\b/i,
    cause: 'the registry wants a sign-in, or does not grant this image',
    fix: 'sign in (`podman login REGISTRY` or `docker login REGISTRY`), or check the name in codeExecutionMode.sandbox.image',
  },
  {
    match: /manifest unknown|name unknown|not found|does not exist|repository .* not found/i,
    cause: 'the registry has no such image or tag',
    fix: 'check the name and tag in codeExecutionMode.sandbox.image (sandbox.image)',
  },
  {
    match:
      /no such host|dial tcp|connection refused|i\/o timeout|network is unreachable|name resolution|TLS handshake timeout|connection reset|EOF$/i,
    cause: 'the registry could not be reached (no network, DNS, or a firewall)',
    fix: 'check the connection; behind a proxy, give the runtime HTTPS_PROXY',
  },
  {
    match: /no space left on device/i,
    cause: 'the disk is full',
    fix: 'free space (e.g. `podman system prune` or `docker system prune`), then pull again',
  },
];

/** " Likely cause: ...; fix: ..." for the runtime's last line, or "" when it says nothing known. */
export function pullFailureHint(runtimeText: string): string {
  const found = CAUSES.find((c) => c.match.test(runtimeText));
  return found ? ` Likely cause: ${found.cause}. Fix: ${found.fix}.` : '';
}
