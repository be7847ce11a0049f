// A provider package as a registry serves it, for the tests that ship packed packages: a zip made here, no zip tool.
import { crc32 } from "node:zlib";

/** A zip of `files` (path to text, mode 0755), stored uncompressed, with Unix modes: a provider package as registries serve it. */
export function storedZip(files: Readonly<Record<string, string>>): Buffer {
  const u16 = (value: number) => Buffer.from([value & 0xff, value >>> 8]);
  const u32 = (value: number) => {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32LE(value >>> 0);
    return bytes;
  };
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [path, text] of Object.entries(files)) {
    const name = Buffer.from(path);
    const data = Buffer.from(text);
    // Version 2.0, no flags, stored, 1980-01-01 00:00, CRC-32, sizes, name length, no extra field.
    const common = [
      u16(20),
      u16(0),
      u16(0),
      u16(0),
      u16(33),
      u32(crc32(data)),
      u32(data.length),
      u32(data.length),
      u16(name.length),
      u16(0),
    ];
    const local = Buffer.concat([u32(0x04034b50), ...common, name, data]);
    // Made by Unix (3), no comment, disk 0, the mode in the external attributes' high half.
    const central = [u32(0x02014b50), u16((3 << 8) | 20), ...common, u16(0), u16(0), u16(0), u32(0o100755 << 16), u32(offset), name];
    centrals.push(Buffer.concat(central));
    locals.push(local);
    offset += local.length;
  }
  const directory = Buffer.concat(centrals);
  const count = Object.keys(files).length;
  const end = Buffer.concat([u32(0x06054b50), u16(0), u16(0), u16(count), u16(count), u32(directory.length), u32(offset), u16(0)]);
  return Buffer.concat([...locals, directory, end]);
}
