/**
 * Just enough of Kubernetes' protobuf encoding to read an object's kind, name and namespace: newer
 * client-go sends built-in kinds (OpenTofu's lock Lease) as `application/vnd.kubernetes.protobuf`,
 * and the broker must judge those bodies as it judges JSON ones. Pure.
 *
 * The wire form: the magic `k8s\0`, then a `runtime.Unknown` message (1: TypeMeta {1: apiVersion,
 * 2: kind}, 2: raw, the object's own message), whose field 1 is its ObjectMeta {1: name, 3: namespace}.
 */

export const protobufContentType = "application/vnd.kubernetes.protobuf";
const magic = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** The length-delimited fields of one message, by number (the last of each wins, as protobuf merges). */
function fields(message: Buffer): Map<number, Buffer> | undefined {
  const found = new Map<number, Buffer>();
  let offset = 0;
  const varint = (): number | undefined => {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (offset >= message.length) return undefined;
      const byte = message[offset++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    return undefined;
  };
  while (offset < message.length) {
    const key = varint();
    if (key === undefined) return undefined;
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) {
      if (varint() === undefined) return undefined;
    } else if (wire === 1) {
      offset += 8;
    } else if (wire === 5) {
      offset += 4;
    } else if (wire === 2) {
      const length = varint();
      if (length === undefined || offset + length > message.length) return undefined;
      found.set(field, message.subarray(offset, offset + length));
      offset += length;
    } else {
      return undefined;
    }
  }
  return offset === message.length ? found : undefined;
}

/** The kind and metadata of a protobuf-encoded object, shaped as its JSON would be; undefined when it is not one. */
export function decodeProtobufObject(body: Buffer): { kind?: string; metadata: { name?: string; namespace?: string } } | undefined {
  if (body.length < magic.length || !body.subarray(0, magic.length).equals(magic)) return undefined;
  const unknown = fields(body.subarray(magic.length));
  const raw = unknown?.get(2);
  if (!unknown || !raw) return undefined;
  const typeMeta = unknown.get(1) ? fields(unknown.get(1)!) : new Map<number, Buffer>();
  const metadata = fields(raw)?.get(1);
  const meta = metadata ? fields(metadata) : undefined;
  if (!typeMeta || !meta) return undefined;
  // proto3 writes no empty strings, and an empty one means unset: as omitted from JSON.
  const text = (value: Buffer | undefined) => (value === undefined || value.length === 0 ? undefined : value.toString("utf8"));
  const kind = text(typeMeta.get(2));
  const name = text(meta.get(1));
  const namespace = text(meta.get(3));
  return { ...(kind ? { kind } : {}), metadata: { ...(name ? { name } : {}), ...(namespace ? { namespace } : {}) } };
}
