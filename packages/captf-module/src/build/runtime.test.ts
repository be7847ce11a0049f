import { describe, expect, it } from "@jest/globals";
import { elfArchitecture, parseRuntimeVersion } from "./runtime.js";

const elfHeader = (machine: number, elfClass = 2, data = 1) => {
  const header = new Uint8Array(20);
  header.set([0x7f, 0x45, 0x4c, 0x46, elfClass, data]);
  header[18] = machine & 0xff;
  header[19] = machine >> 8;
  return header;
};

describe("a runtime binary", () => {
  it("is read as amd64 or arm64 from its ELF header", () => {
    expect(elfArchitecture(elfHeader(0x3e))).toBe("amd64");
    expect(elfArchitecture(elfHeader(0xb7))).toBe("arm64");
  });

  it("is nothing the images take when it is not a 64-bit little-endian ELF of those", () => {
    expect(elfArchitecture(elfHeader(0x28))).toBeUndefined(); // 32-bit ARM
    expect(elfArchitecture(elfHeader(0x3e, 1))).toBeUndefined();
    expect(elfArchitecture(elfHeader(0x3e, 2, 2))).toBeUndefined();
    expect(elfArchitecture(new TextEncoder().encode("#!/bin/sh\necho tofu v1\n"))).toBeUndefined();
    expect(elfArchitecture(new Uint8Array(4))).toBeUndefined();
  });

  it("says which runtime and release it is in the first line of its version", () => {
    expect(parseRuntimeVersion("OpenTofu v1.12.6\non linux_amd64\n")).toEqual({ name: "tofu", version: "1.12.6" });
    expect(parseRuntimeVersion("Terraform v1.5.7\non linux_amd64\n\nYour version of Terraform is out of date!\n")).toEqual({
      name: "terraform",
      version: "1.5.7",
    });
    expect(parseRuntimeVersion("OpenTofu v1.13.0-beta1\n")).toEqual({ name: "tofu", version: "1.13.0-beta1" });
    expect(parseRuntimeVersion("Packer v1.9.0\n")).toBeUndefined();
  });
});
