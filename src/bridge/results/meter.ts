// The token meter of a run, made where the figures are: the text the model is handed (the
// result's text parts), the bytes of proxied tool results the code received (host-methods.ts
// counts them), and the tools it called with their listings from the catalog. The run log
// records it; the extension only shows it.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { RunMeter } from '../../state/run-log/events.ts';
import { estimateTokens, TOKEN_ESTIMATE } from '../../shared/token-estimate.ts';

/** What a run's tool calls left for the meter (host-methods.ts). */
export interface ToolUsage {
  /** Bytes (JSON, UTF-8) of the proxied tools' results the code received. */
  resultBytes: number;
  /** Each distinct tool called, with its estimated listing tokens. */
  listings: ReadonlyMap<string, number>;
}

/** A tool as a plain tools/list shows it to the model: name, description, inputSchema. */
export function listingText(tool: { tool: string; description: string; inputSchema: unknown }): string {
  return JSON.stringify({ name: tool.tool, description: tool.description, inputSchema: tool.inputSchema });
}

/** The text parts of a result: what the model reads (images and files are attached apart). */
export function resultText(reply: CallToolResult): string {
  return reply.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

/**
 * The meter of a run whose result is `reply`. What stayed in the sandbox is counted from below:
 * even if every byte of the text the model got came from the tools' results, the rest did not
 * reach it.
 */
export function runMeter(reply: CallToolResult, usage: ToolUsage): RunMeter {
  const text = resultText(reply);
  let listingTokens = 0;
  for (const tokens of usage.listings.values()) listingTokens += tokens;
  return {
    modelChars: text.length,
    modelTokens: estimateTokens(text),
    toolResultBytes: usage.resultBytes,
    keptBytes: Math.max(0, usage.resultBytes - Buffer.byteLength(text, 'utf8')),
    toolsUsed: usage.listings.size,
    listingTokens,
    tokenizer: TOKEN_ESTIMATE,
  };
}
