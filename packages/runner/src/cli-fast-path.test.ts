import { describe, expect, it } from "@jest/globals";
import { fastParsers, parseRunFast, parseRunWithYargs, parseWithYargs } from "./cli.js";

const jobArgs = [
  "--op=apply",
  "--bin=/captf/runtime",
  "--image=ghcr.io/acme/m:v1",
  "--module=/captf/module",
  "--providers=/captf/providers",
  "--workdir=/captf/work",
  "--config=/captf/config",
  "--lock-timeout=300s",
  "--stop-timeout=570s",
  "--result=/dev/termination-log",
  "--backend-config=secret_suffix=abc-m",
  "--backend-config=namespace=team-a",
  "--backend-config=in_cluster_config=true",
  '--backend-config=labels={"captf.io/managed"="true"}',
  "--guard-deletes",
  "--inputs-hash=h2:abc",
  "--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformMachine/team-a/m/uid-1",
  "--job-name=captf-m-m-apply-a1-abcdef",
];

function kebabOnly(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([key]) => key !== "_" && key !== "$0" && !/[A-Z]/.test(key)));
}

describe("run's fast flag parser", () => {
  it.each([
    ["a Job's arguments", jobArgs],
    ["the minimum", ["--op", "destroy"]],
    [
      "separate values and repeated --bin",
      [
        "--op",
        "restore",
        "--bin",
        "/usr/bin/tofu",
        "--bin=-chdir=x",
        "--restore-chunks",
        "3",
        "--restore-resources=12",
        "--expect-plan=p1:x",
      ],
    ],
    ["hidden flags", ["--op=plan", "--events-server=https://127.0.0.1:6443", "--service-account-dir=/tmp/sa", "--force-unlock=1234"]],
    [
      "an empty value, a value holding =, and a switch between values",
      ["--op=apply", "--image=", "--backend-config", 'labels={"a"="b"}', "--guard-deletes", "--bin", "tofu"],
    ],
  ])("gives what yargs gives for %s", async (_, argv) => {
    const fast = parseRunFast(argv);
    expect(fast).toBeDefined();
    expect(fast).toEqual(kebabOnly(await parseRunWithYargs(argv)));
  });

  it.each([
    ["help", ["--op=apply", "--help"]],
    ["an unknown flag", ["--op=apply", "--bogus=1"]],
    ["a bad operation", ["--op=explode"]],
    ["no operation", ["--image=x"]],
    ["a positional argument", ["--op=apply", "extra"]],
    ["a negated boolean", ["--op=apply", "--no-guard-deletes"]],
    ["a boolean with a value", ["--op=apply", "--guard-deletes=false"]],
    ["a repeated single-value flag", ["--op=apply", "--image=a", "--image=b"]],
    ["a non-number count", ["--op=restore", "--restore-chunks=two"]],
    ["a negative count", ["--op=restore", "--restore-chunks=-1"]],
    ["a separate value that starts with a dash", ["--op=apply", "--image", "-x"]],
    ["a flag without its value", ["--op=apply", "--image"]],
    ["a repeated single-value flag in the separate form", ["--op", "apply", "--op", "plan"]],
    ["a short flag", ["--op=apply", "-x"]],
    ["the end of flags", ["--op=apply", "--", "--image=x"]],
    ["a flag name with a value separated by a space after =", ["--op=apply", "--image=", "x"]],
  ])("leaves %s to yargs", (_, argv) => {
    expect(parseRunFast(argv)).toBeUndefined();
  });
});

describe("version's and copy's fast parsers (the init container's command)", () => {
  it.each([
    ["version", []],
    ["version", ["--format=json"]],
    ["version", ["--format", "text"]],
    ["copy", ["/captf/bin"]],
    ["copy", ["/captf/bin", "--from=/opt/captf/runner"]],
    ["copy", ["--from", "/opt/captf/runner", "/captf/bin"]],
  ] as const)("gives what yargs gives for %s %j", async (command, argv) => {
    const fast = fastParsers[command]([...argv]);
    expect(fast).toBeDefined();
    const slow = await parseWithYargs(command, [...argv]);
    expect({ ...kebabOnly(fast!), _: fast!._ }).toEqual({ ...kebabOnly(slow), _: slow._ });
  });

  it.each([
    ["version", ["--help"]],
    ["version", ["--format=yaml"]],
    ["version", ["extra"]],
    ["copy", []],
    ["copy", ["/a", "/b"]],
    ["copy", ["/captf/bin", "--bogus"]],
  ] as const)("leaves %s %j to yargs", (command, argv) => {
    expect(fastParsers[command]([...argv])).toBeUndefined();
  });
});
