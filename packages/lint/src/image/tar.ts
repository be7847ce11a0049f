// A streaming tar reader (ustar, GNU long names, PAX): headers are handed out one by one and a
// body is collected only when asked for, so a layer of any size passes through in bounded memory.

export type EntryType = "file" | "dir" | "symlink" | "hardlink" | "other";

export interface TarHeader {
  readonly name: string;
  readonly type: EntryType;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly size: number;
  readonly linkname: string;
}

/** What to do with an entry's body: collect it (up to its size) or skip it. */
export type BodyChoice = "keep" | "skip";

export class TarFormatError extends Error {}

function field(block: Buffer, offset: number, length: number): string {
  const raw = block.subarray(offset, offset + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end < 0 ? length : end).toString("utf8");
}

function octal(block: Buffer, offset: number, length: number): number {
  const raw = block.subarray(offset, offset + length);
  if (raw[0]! & 0x80) {
    // GNU base-256 for large values.
    let value = 0;
    for (let i = 1; i < length; i++) value = value * 256 + raw[i]!;
    return value;
  }
  const text = field(block, offset, length).trim();
  return text === "" ? 0 : parseInt(text, 8);
}

function typeOf(flag: string): EntryType {
  switch (flag) {
    case "0":
    case "\0":
    case "":
    case "7":
      return "file";
    case "5":
      return "dir";
    case "2":
      return "symlink";
    case "1":
      return "hardlink";
    default:
      return "other";
  }
}

function parsePax(body: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < body.length) {
    const space = body.indexOf(0x20, i);
    if (space < 0) break;
    const length = parseInt(body.subarray(i, space).toString("utf8"), 10);
    if (!(length > 0)) break;
    const record = body.subarray(space + 1, i + length - 1).toString("utf8");
    const eq = record.indexOf("=");
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    i += length;
  }
  return out;
}

/**
 * Reads a tar stream. `onEntry` sees each header and chooses whether the body is kept; kept bodies
 * arrive through `onBody`. Resolves when the stream ends.
 */
export async function readTar(
  stream: AsyncIterable<Buffer | Uint8Array>,
  onEntry: (header: TarHeader) => BodyChoice,
  onBody: (header: TarHeader, body: Buffer) => void,
): Promise<void> {
  let pending = Buffer.alloc(0);
  let state:
    | {
        header: TarHeader | undefined;
        meta: "pax" | "longname" | "longlink" | undefined;
        remaining: number;
        padding: number;
        keep: boolean;
        chunks: Buffer[];
      }
    | undefined;
  let longName: string | undefined;
  let longLink: string | undefined;
  let pax: Record<string, string> = {};
  let ended = false;

  const finishBody = (): void => {
    const s = state!;
    const body = Buffer.concat(s.chunks);
    if (s.meta === "pax") pax = { ...pax, ...parsePax(body) };
    else if (s.meta === "longname") longName = body.toString("utf8").replace(/\0+$/, "");
    else if (s.meta === "longlink") longLink = body.toString("utf8").replace(/\0+$/, "");
    else if (s.keep && s.header) onBody(s.header, body);
  };

  for await (const chunk of stream) {
    pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
    for (;;) {
      if (ended) break;
      if (state) {
        if (state.remaining > 0) {
          const take = Math.min(state.remaining, pending.length);
          if (take === 0) break;
          if (state.keep || state.meta) state.chunks.push(pending.subarray(0, take));
          pending = pending.subarray(take);
          state.remaining -= take;
          if (state.remaining > 0) break;
        }
        if (pending.length < state.padding) break;
        pending = pending.subarray(state.padding);
        finishBody();
        state = undefined;
        continue;
      }
      if (pending.length < 512) break;
      const block = pending.subarray(0, 512);
      pending = pending.subarray(512);
      if (block.every((b) => b === 0)) {
        ended = true;
        break;
      }
      const checksum = octal(block, 148, 8);
      let sum = 0;
      for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : block[i]!;
      if (sum !== checksum) throw new TarFormatError("a tar header has a bad checksum");
      const flag = String.fromCharCode(block[156]!);
      let size = octal(block, 124, 12);
      const padding = (512 - (size % 512)) % 512;
      if (flag === "x" || flag === "g" || flag === "L" || flag === "K") {
        const meta = flag === "x" ? "pax" : flag === "L" ? "longname" : flag === "K" ? "longlink" : undefined;
        state = { header: undefined, meta, remaining: size, padding, keep: false, chunks: [] };
        if (flag === "g") state.meta = undefined;
        continue;
      }
      const prefix = block.subarray(257, 263).toString("latin1").startsWith("ustar") ? field(block, 345, 155) : "";
      let name = field(block, 0, 100);
      if (prefix) name = `${prefix}/${name}`;
      if (longName !== undefined) name = longName;
      if (pax.path !== undefined) name = pax.path;
      let linkname = longLink ?? pax.linkpath ?? field(block, 157, 100);
      if (pax.size !== undefined) size = parseInt(pax.size, 10);
      const header: TarHeader = {
        name,
        type: typeOf(flag),
        mode: octal(block, 100, 8) & 0o7777,
        uid: pax.uid !== undefined ? parseInt(pax.uid, 10) : octal(block, 108, 8),
        gid: pax.gid !== undefined ? parseInt(pax.gid, 10) : octal(block, 116, 8),
        size: flag === "1" || flag === "2" || flag === "5" ? 0 : size,
        linkname,
      };
      longName = undefined;
      longLink = undefined;
      pax = {};
      linkname = "";
      const bodySize = header.type === "file" || header.type === "other" ? size : 0;
      const keep = header.type === "file" && onEntry(header) === "keep";
      if (header.type !== "file") onEntry(header);
      state = { header, meta: undefined, remaining: bodySize, padding: (512 - (bodySize % 512)) % 512, keep, chunks: [] };
    }
    if (ended) break;
  }
  if (state && !ended) {
    if (state.remaining > 0) throw new TarFormatError("the tar stream ends inside an entry");
    finishBody();
  }
}
