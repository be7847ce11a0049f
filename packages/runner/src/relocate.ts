import { open } from "node:fs/promises";
import { basename } from "node:path";

/** Reads `length` bytes at `offset` of an ELF file. */
export type ElfReader = (offset: number, length: number) => Promise<Buffer>;

/** A NUL-terminated path inside the file: where it starts, how many bytes it may take with its NUL, and its text. */
export interface ElfPath {
  offset: number;
  room: number;
  value: string;
}

const ptLoad = 1;
const ptDynamic = 2;
const ptInterp = 3;
const dtNull = 0n;
const dtStrtab = 5n;
const dtRpath = 15n;
const dtRunpath = 29n;

export class NotRelocatableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NotRelocatableError";
  }
}

async function stringAt(read: ElfReader, offset: number): Promise<string> {
  const bytes = await read(offset, 4096);
  const end = bytes.indexOf(0);
  if (end < 0) throw new NotRelocatableError(`no NUL within 4096 bytes of offset ${offset}`);
  return bytes.subarray(0, end).toString("utf8");
}

/**
 * The loader (PT_INTERP) and library path (DT_RUNPATH, else DT_RPATH) an ELF64 little-endian
 * executable names; undefined for a file that is not ELF at all (a script).
 */
export async function elfLoaderPaths(read: ElfReader): Promise<{ interpreter?: ElfPath; runpath?: ElfPath } | undefined> {
  const header = await read(0, 64);
  if (header.length < 64 || header.readUInt32BE(0) !== 0x7f454c46) return undefined;
  if (header[4] !== 2 || header[5] !== 1) throw new NotRelocatableError("not a 64-bit little-endian ELF file");
  const phoff = Number(header.readBigUInt64LE(0x20));
  const phentsize = header.readUInt16LE(0x36);
  const programHeaders = await read(phoff, phentsize * header.readUInt16LE(0x38));
  const segments = Array.from({ length: header.readUInt16LE(0x38) }, (_, index) => {
    const at = index * phentsize;
    return {
      type: programHeaders.readUInt32LE(at),
      offset: Number(programHeaders.readBigUInt64LE(at + 0x08)),
      vaddr: Number(programHeaders.readBigUInt64LE(at + 0x10)),
      filesz: Number(programHeaders.readBigUInt64LE(at + 0x20)),
    };
  });
  const result: { interpreter?: ElfPath; runpath?: ElfPath } = {};
  const interp = segments.find((segment) => segment.type === ptInterp);
  if (interp) result.interpreter = { offset: interp.offset, room: interp.filesz, value: await stringAt(read, interp.offset) };

  const dynamic = segments.find((segment) => segment.type === ptDynamic);
  if (!dynamic) return result;
  const entries = await read(dynamic.offset, dynamic.filesz);
  const tags = new Map<bigint, bigint>();
  for (let at = 0; at + 16 <= entries.length; at += 16) {
    const tag = entries.readBigUInt64LE(at);
    if (tag === dtNull) break;
    tags.set(tag, entries.readBigUInt64LE(at + 8));
  }
  const strtab = tags.get(dtStrtab);
  const pathIndex = tags.get(dtRunpath) ?? tags.get(dtRpath);
  if (strtab === undefined || pathIndex === undefined) return result;
  const load = segments.find(
    (segment) => segment.type === ptLoad && segment.vaddr <= Number(strtab) && Number(strtab) < segment.vaddr + segment.filesz,
  );
  if (!load) throw new NotRelocatableError("the string table lies in no loaded segment");
  const offset = Number(strtab) - load.vaddr + load.offset + Number(pathIndex);
  const value = await stringAt(read, offset);
  result.runpath = { offset, room: Buffer.byteLength(value) + 1, value };
  return result;
}

/** The bytes to write at `path.offset` so it reads `value`: the text, then NULs to the end of its room. */
export function rewrittenPath(path: ElfPath, value: string): Buffer {
  if (Buffer.byteLength(value) >= path.room)
    throw new NotRelocatableError(`"${value}" is longer than the ${path.room - 1} bytes "${path.value}" leaves`);
  const bytes = Buffer.alloc(path.room);
  bytes.write(value);
  return bytes;
}

/**
 * Points a bundle's node, just copied into `dir`, at the loader and libraries copied beside it
 * (`dir`/lib), in place: the new paths may not be longer than the ones the bundle was built with.
 * A node that is not ELF (a test's stand-in script) is left as it is.
 */
export async function relocateNode(file: string, dir: string): Promise<void> {
  const handle = await open(file, "r+");
  try {
    const read: ElfReader = async (offset, length) => {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      return buffer.subarray(0, bytesRead);
    };
    const paths = await elfLoaderPaths(read);
    if (!paths) return;
    const { interpreter, runpath } = paths;
    const wanted: [ElfPath | undefined, string][] = [
      [interpreter, interpreter ? `${dir}/lib/${basename(interpreter.value)}` : ""],
      [runpath, `${dir}/lib`],
    ];
    for (const [path, value] of wanted) {
      if (path && path.value !== value) await handle.write(rewrittenPath(path, value), 0, path.room, path.offset);
    }
  } finally {
    await handle.close();
  }
}
