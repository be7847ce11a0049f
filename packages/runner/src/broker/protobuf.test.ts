import { describe, expect, it } from "@jest/globals";
import { decodeProtobufObject } from "./protobuf.js";

// Hand-encoded as client-go writes a Lease: magic, runtime.Unknown {typeMeta, raw {metadata {name, namespace}, spec}}.
const varint = (value: number): number[] => (value < 0x80 ? [value] : [(value & 0x7f) | 0x80, ...varint(value >>> 7)]);
const field = (number: number, bytes: Buffer): Buffer =>
  Buffer.concat([Buffer.from([...varint((number << 3) | 2), ...varint(bytes.length)]), bytes]);
const text = (number: number, value: string) => field(number, Buffer.from(value));
const varintField = (number: number, value: number) => Buffer.from([...varint(number << 3), ...varint(value)]);
const magic = Buffer.from("k8s\0", "latin1");

function lease(name: string, namespace: string): Buffer {
  const metadata = Buffer.concat([text(1, name), text(3, namespace), varintField(9, 12345)]);
  const spec = Buffer.concat([text(1, "holder"), varintField(2, 0)]);
  const raw = Buffer.concat([field(1, metadata), field(2, spec)]);
  const typeMeta = Buffer.concat([text(1, "coordination.k8s.io/v1"), text(2, "Lease")]);
  return Buffer.concat([magic, field(1, typeMeta), field(2, raw), text(3, ""), text(4, "")]);
}

describe("decodeProtobufObject", () => {
  it("reads the kind, name and namespace of a protobuf object", () => {
    expect(decodeProtobufObject(lease("lock-tfstate-default-abc-m", "team-a"))).toEqual({
      kind: "Lease",
      metadata: { name: "lock-tfstate-default-abc-m", namespace: "team-a" },
    });
    // A long name: multi-byte lengths.
    expect(decodeProtobufObject(lease("lock-tfstate-default-abc-m", ""))).toEqual({
      kind: "Lease",
      metadata: { name: "lock-tfstate-default-abc-m" },
    });
    const long = "x".repeat(300);
    expect(decodeProtobufObject(lease(long, "team-a"))?.metadata.name).toBe(long);
  });

  it("reads nothing from what is not one", () => {
    expect(decodeProtobufObject(Buffer.from('{"metadata":{"name":"x"}}'))).toBeUndefined();
    expect(decodeProtobufObject(magic)).toBeUndefined();
    expect(decodeProtobufObject(lease("a", "b").subarray(0, 20))).toBeUndefined();
    expect(decodeProtobufObject(Buffer.concat([magic, Buffer.from([0x0a, 0xff])]))).toBeUndefined();
  });
});
