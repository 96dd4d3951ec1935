// A small writer of the ustar tar format, for the workspace snapshot a remote engine's sandbox
// gets over its frame channel (workspace-snapshot.ts): folders and regular files only (no
// links, devices or owners), a path too long for the header in a pax record before it.
// Python's tarfile reads it, as any tar does.

export const BLOCK = 512;

export interface TarEntry {
  /** The path in the archive, "/"-separated, relative, without a trailing "/". */
  name: string;
  type: 'file' | 'dir';
  /** Bytes of a file's content (0 for a folder). */
  size: number;
  /** Permission bits. */
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
}

/** `value` in octal, `width - 1` digits and a NUL, into `header` at `offset`. */
function octal(header: Buffer, offset: number, width: number, value: number): void {
  header.write(
    Math.floor(value)
      .toString(8)
      .padStart(width - 1, '0') + '\0',
    offset,
    width,
    'ascii',
  );
}

/** The header fields of one entry, its checksum computed. */
function headerBlock(name: string, prefix: string, type: string, size: number, mode: number, mtime: number): Buffer {
  const header = Buffer.alloc(BLOCK);
  header.write(name, 0, 100, 'utf8');
  octal(header, 100, 8, mode & 0o7777);
  octal(header, 108, 8, 0);
  octal(header, 116, 8, 0);
  octal(header, 124, 12, size);
  octal(header, 136, 12, mtime);
  header.fill(' ', 148, 156);
  header.write(type, 156, 1, 'ascii');
  header.write('ustar\0', 257, 6, 'ascii');
  header.write('00', 263, 2, 'ascii');
  header.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return header;
}

/** `name` as ustar's prefix and name fields (each in bytes), or undefined when it does not fit them. */
function splitName(name: string): { prefix: string; name: string } | undefined {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', name };
  for (let at = name.indexOf('/'); at > 0; at = name.indexOf('/', at + 1)) {
    const prefix = name.slice(0, at);
    const rest = name.slice(at + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100 && rest) return { prefix, name: rest };
  }
  return undefined;
}

/** A pax record "LEN key=value\n", LEN counting itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyLength = Buffer.byteLength(body);
  let length = bodyLength + String(bodyLength).length;
  while (bodyLength + String(length).length !== length) length = bodyLength + String(length).length;
  return `${length}${body}`;
}

/** Zeros that fill `size` bytes up to a whole block. */
export function padding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** The blocks before an entry's content: its header, after a pax header when its path is too long. */
export function entryHeader(entry: TarEntry): Buffer {
  const type = entry.type === 'dir' ? '5' : '0';
  const size = entry.type === 'dir' ? 0 : entry.size;
  const name = entry.type === 'dir' ? `${entry.name}/` : entry.name;
  const split = splitName(name);
  if (split) return headerBlock(split.name, split.prefix, type, size, entry.mode, entry.mtime);
  const pax = Buffer.from(paxRecord('path', name), 'utf8');
  return Buffer.concat([
    headerBlock('PaxHeader', '', 'x', pax.length, 0o644, entry.mtime),
    pax,
    padding(pax.length),
    // The path's last 100 bytes stand in for readers without pax.
    headerBlock(
      Buffer.from(name)
        .subarray(-100)
        .toString('utf8')
        .replace(/^\uFFFD+/, ''),
      '',
      type,
      size,
      entry.mode,
      entry.mtime,
    ),
  ]);
}

/** The end of an archive: two zero blocks. */
export function archiveEnd(): Buffer {
  return Buffer.alloc(2 * BLOCK);
}
