// A small stdio MCP server for the agent-task suite: one tool, `screenshot`, that returns a
// PNG the size of a real screenshot (noise compresses badly: 256x160 is about 120 KB, 160 KB
// as base64), beside a line of text. Deterministic: the same size gives the same bytes.
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { encodePng } from '../fixtures/png.ts';

/** An RGB PNG of deterministic noise over a gradient. */
export function noisePng(width: number, height: number, seed = 1): Buffer {
  let state = (seed * 2654435761) >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state & 0xff;
  };
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    raw[row] = 0;
    for (let x = 0; x < width; x++) {
      const i = row + 1 + x * 3;
      raw[i] = ((x * 255) / width + next()) >> 1;
      raw[i + 1] = ((y * 255) / height + next()) >> 1;
      raw[i + 2] = next();
    }
  }
  return encodePng(width, height, raw);
}

async function main(): Promise<void> {
  const server = new McpServer({ name: 'screenshots', version: '1.0.0' });
  server.registerTool(
    'screenshot',
    {
      description: 'Take a screenshot of the dashboard as a PNG image',
      inputSchema: {
        width: z.number().int().min(16).max(1024).default(256).describe('width in pixels'),
        height: z.number().int().min(16).max(1024).default(160).describe('height in pixels'),
      },
    },
    async ({ width, height }) => ({
      content: [
        { type: 'image', data: noisePng(width, height).toString('base64'), mimeType: 'image/png' },
        { type: 'text', text: `dashboard screenshot, ${width}x${height}` },
      ],
    }),
  );
  await server.connect(new StdioServerTransport());
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
