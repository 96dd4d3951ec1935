// How a bridge started by VS Code asks the person to sign in: it writes its sign-ins in
// progress to `<stateDir>/sign-in.<owner>.json` (owner: the window's id, so each window asks
// only about its own bridge); the extension watches the state dir, asks "Sign in to <server>"
// and opens the URL in the browser only if the person clicks. The file holds no secret: the
// authorization URL carries a PKCE challenge and a state, never the verifier or a token.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { SERVER_NAME } from '../config/schema.ts';
import { ensurePrivateDirAsync, readPrivateFileSync, writePrivateFile } from './private-files.ts';

const OWNER = /^[A-Za-z0-9_-]{1,128}$/;

const signInNoticeSchema = z.object({
  /** Changes with every new authorization request, so a request is asked about once. */
  id: z.string().max(128),
  server: z.string().regex(SERVER_NAME),
  url: z.string().max(8192),
  /** When the loopback callback stops waiting (ms). */
  expiresAt: z.number(),
});
export type SignInNotice = z.infer<typeof signInNoticeSchema>;

const signInFileSchema = z.object({
  version: z.literal(1),
  requests: z.array(signInNoticeSchema).max(1000),
});

export function signInFileName(owner: string): string | undefined {
  return OWNER.test(owner) ? `sign-in.${owner}.json` : undefined;
}

/** The notice file is a few hundred bytes; a bigger one is not read. */
const MAX_NOTICE_BYTES = 256 * 1024;

/**
 * The extension's side: the requests of the file not asked about yet (their ids are added to
 * `shown`) and not expired, with an openable URL. A missing, oversized or malformed file: none.
 */
export function newSignInRequests(file: string, shown: Set<string>, now = Date.now()): SignInNotice[] {
  let requests: SignInNotice[];
  try {
    const text = readPrivateFileSync(file, MAX_NOTICE_BYTES)?.toString('utf8');
    if (text === undefined) return [];
    requests = signInFileSchema.parse(JSON.parse(text)).requests;
  } catch {
    return [];
  }
  const fresh = requests.filter((r) => !shown.has(r.id) && r.expiresAt >= now && openableSignInUrl(r.url));
  for (const request of fresh) shown.add(request.id);
  return fresh;
}

/** Whether a URL may be opened for a sign-in: https, or http to this machine (RFC 8252 loopback). */
export function openableSignInUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.username || url.password) return undefined;
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) return url;
  return undefined;
}

/** The bridge's side: keeps the file in step with its sign-ins in progress (none: no file). */
export class SignInBoard {
  private readonly file: string | undefined;
  private readonly dir: string;
  private readonly notices = new Map<string, SignInNotice>();
  private writing: Promise<void> = Promise.resolve();

  /** No owner (the CLI): nothing is written; the URL goes to stderr only. */
  constructor(stateDir: string, owner: string | undefined) {
    this.dir = stateDir;
    const name = owner ? signInFileName(owner) : undefined;
    this.file = name ? join(stateDir, name) : undefined;
  }

  set(server: string, notice: SignInNotice | undefined): void {
    if (notice) this.notices.set(server, notice);
    else if (!this.notices.delete(server)) return;
    this.flush();
  }

  private flush(): void {
    const file = this.file;
    if (!file) return;
    const requests = [...this.notices.values()];
    this.writing = this.writing
      .then(async () => {
        if (requests.length === 0) return rm(file, { force: true });
        await ensurePrivateDirAsync(this.dir);
        await writePrivateFile(file, `${JSON.stringify({ version: 1, requests })}\n`);
      })
      .catch(() => undefined);
  }

  /** Resolves once every change so far is on disk. */
  settled(): Promise<void> {
    return this.writing;
  }
}
