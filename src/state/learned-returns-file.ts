// learned-returns.json in the state dir: how the calls of each proxied tool without an
// outputSchema returned (one text item each time, or other content), so that a restarted
// bridge's signatures say `-> str` or the content type from its start, before any call. Keyed
// by server and tool, with a hash of the tool's inputSchema and outputSchema: what was learned
// of an older schema is not used. Bounded (MAX_LEARNED_TOOLS, the most recently learned kept),
// rewritten under a lock with the other writers' entries merged in. Read as untrusted:
// size-capped, schema-checked, and ignored whole, with the reason, when it does not fit.
import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { withLock } from './lock.ts';
import { ensurePrivateDirAsync, readPrivateFile, writePrivateFile } from './private-files.ts';

export const LEARNED_RETURNS_FILE = 'learned-returns.json';
const LEARNED_RETURNS_LOCK = 'learned-returns.lock';
/** Tools remembered; the least recently learned go first. */
export const MAX_LEARNED_TOOLS = 2000;
/** Longest server and tool names kept (a server's name is at most 64 characters, a listed tool's 256). */
const MAX_SERVER_CHARS = 64;
const MAX_TOOL_CHARS = 256;
/** A bigger file is not read (2,000 entries of the longest names fit in well under this). */
export const MAX_LEARNED_RETURNS_FILE_BYTES = 2 * 1024 * 1024;

const entrySchema = z.object({
  server: z.string().min(1).max(MAX_SERVER_CHARS),
  tool: z.string().min(1).max(MAX_TOOL_CHARS),
  /** toolSchemaHash of the tool when it was learned. */
  schema: z.string().regex(/^[0-9a-f]{32}$/),
  /** "text": every call returned one text item; "content": some call returned anything else. */
  seen: z.enum(['text', 'content']),
  learnedAt: z.number().int().nonnegative(),
});
export type LearnedReturn = z.infer<typeof entrySchema>;
const fileSchema = z.object({ version: z.literal(1), tools: z.array(entrySchema).max(MAX_LEARNED_TOOLS) });

/** What identifies a tool's schema: a change of its inputSchema or outputSchema drops what was learned. */
export function toolSchemaHash(inputSchema: unknown, outputSchema: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify([inputSchema ?? null, outputSchema ?? null]))
    .digest('hex')
    .slice(0, 32);
}

/** What the file holds: its entries, or none and why the file was not used (`problem`, for the log). */
export async function readLearnedReturns(stateDir: string): Promise<{ entries: LearnedReturn[]; problem?: string }> {
  const path = join(stateDir, LEARNED_RETURNS_FILE);
  const ignored = (why: string) => ({ entries: [], problem: `${path} ignored (${why}); it is rewritten as tools are called` });
  let text: string | undefined;
  try {
    text = await readPrivateFile(path, MAX_LEARNED_RETURNS_FILE_BYTES);
  } catch (error) {
    return ignored(error instanceof Error ? error.message : String(error));
  }
  if (text === undefined) {
    const there = await lstat(path).then(
      () => true,
      () => false,
    );
    return there ? ignored(`larger than ${MAX_LEARNED_RETURNS_FILE_BYTES} bytes`) : { entries: [] };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return ignored('not JSON');
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return ignored(
      `not in the expected form: ${issue ? `${issue.path.join('.') || 'the file'}: ${issue.message}` : 'unknown'}`.slice(0, 300),
    );
  }
  return { entries: parsed.data.tools };
}

/**
 * Records what was learned of some tools (an entry replaces the same server and tool's), keeping
 * the other writers' entries and the MAX_LEARNED_TOOLS most recently learned. Names over the
 * caps are not recorded. Throws when the lock cannot be had or the file cannot be written.
 */
export async function saveLearnedReturns(stateDir: string, learned: readonly LearnedReturn[]): Promise<void> {
  const fresh = learned.filter((e) => entrySchema.safeParse(e).success);
  if (fresh.length === 0) return;
  await ensurePrivateDirAsync(stateDir);
  const saved = await withLock(join(stateDir, LEARNED_RETURNS_LOCK), async () => {
    const key = (e: LearnedReturn) => `${e.server}\u0000${e.tool}`;
    const byTool = new Map((await readLearnedReturns(stateDir)).entries.map((e) => [key(e), e]));
    for (const entry of fresh) byTool.set(key(entry), entry);
    const kept = [...byTool.values()].sort((a, b) => b.learnedAt - a.learnedAt).slice(0, MAX_LEARNED_TOOLS);
    await writePrivateFile(join(stateDir, LEARNED_RETURNS_FILE), `${JSON.stringify({ version: 1, tools: kept })}\n`);
  });
  if (!saved) throw new Error(`could not lock ${join(stateDir, LEARNED_RETURNS_LOCK)}`);
}
