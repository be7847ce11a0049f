import { describe, expect, it } from "@jest/globals";
import { assembleImage, imageAssemblyCommands, type ImageAssembly } from "./layout.js";

const image: ImageAssembly = {
  layout: "/out",
  ref: "v1-amd64",
  created: new Date("2026-01-02T03:04:05Z"),
  layers: [
    { source: "/work/base", path: "/", createdBy: "the base" },
    { source: "/work/bundle", path: "/opt/bundle", createdBy: "the bundle" },
  ],
  arch: "amd64",
  user: "65532:65532",
  labels: { "org.opencontainers.image.title": "t", "io.captf.role": "machine" },
  rootless: false,
};

const history = ["--history.created", "2026-01-02T03:04:05.000Z", "--history.created_by"];

describe("assembling one platform's image with umoci", () => {
  it("makes a new image, inserts each layer in order with its history, then sets the config without a history entry", () => {
    expect(imageAssemblyCommands(image)).toEqual([
      ["new", "--image", "/out:v1-amd64"],
      ["insert", "--image", "/out:v1-amd64", ...history, "the base", "/work/base", "/"],
      ["insert", "--image", "/out:v1-amd64", ...history, "the bundle", "/work/bundle", "/opt/bundle"],
      [
        ...["config", "--image", "/out:v1-amd64", "--no-history", "--created", "2026-01-02T03:04:05.000Z", "--config.user", "65532:65532"],
        ...["--config.workingdir", "/", "--architecture", "amd64", "--os", "linux"],
        ...["--config.label", "org.opencontainers.image.title=t", "--config.label", "io.captf.role=machine"],
      ],
    ]);
  });

  it("inserts rootless when asked, and sets env and entrypoint in their order; config takes no --rootless", () => {
    const commands = imageAssemblyCommands({
      ...image,
      rootless: true,
      env: ["PATH=/usr/bin", "A=b"],
      entrypoint: ["node", "/opt/m.mjs"],
    });
    expect(commands.filter((args) => args.includes("--rootless")).map((args) => args[0])).toEqual(["insert", "insert"]);
    expect(commands.at(-1)!.slice(8, 16)).toEqual([
      ...["--config.env", "PATH=/usr/bin", "--config.env", "A=b"],
      ...["--config.entrypoint", "node", "--config.entrypoint", "/opt/m.mjs"],
    ]);
  });

  it("runs each command as umoci through the runner it is given", () => {
    const ran: [string, readonly string[]][] = [];
    assembleImage((command, args) => {
      ran.push([command, args]);
      return "";
    }, image);
    expect(ran).toEqual(imageAssemblyCommands(image).map((args) => ["umoci", args]));
  });
});
