import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { pluginEventReasons } from "@captf/contract/api";
import { exitCodes, main } from "./cli.js";
import { connect, kubeconfigFiles } from "./kube.js";

async function run(argv: string[], env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
  });
  return { code, stdout, stderr };
}

describe("kubectl captf --help", () => {
  it.each([[[]], [["describe", "cluster"]], [["plan"]], [["plan", "show"]], [["plan", "approve"]], [["restore"]], [["logs"]]])(
    "%j --help prints usage and exits 0",
    async (command) => {
      const { code, stdout, stderr } = await run([...command, "--help"]);
      expect(stderr).toBe("");
      expect(code).toBe(exitCodes.ok);
      expect(stdout).toContain(`kubectl captf ${command.join(" ")}`.trim());
      expect(stdout).toContain("--output");
    },
  );

  it("refuses bad arguments with exit 2 before connecting", async () => {
    expect(await run([])).toEqual({
      code: exitCodes.usage,
      stdout: "",
      stderr: expect.stringContaining("name a command: describe, plan, restore or logs"),
    });
    expect((await run(["plan", "show", "demo"])).stderr).toContain('"demo" is not <kind>/<name>');
    expect((await run(["restore", "tfc/x"])).stderr).toContain("Missing required argument: serial");
    expect((await run(["logs", "terraformcluster/x", "-o", "yaml"])).code).toBe(exitCodes.usage);
    const missing = await run(["logs", "terraformcluster/x"], { KUBECONFIG: "/nonexistent/config" });
    expect(missing).toEqual({
      code: exitCodes.usage,
      stdout: "",
      stderr: expect.stringContaining("no kubeconfig: /nonexistent/config not found"),
    });
  });
});

describe("the connection", () => {
  it("reads --kubeconfig, else every file of $KUBECONFIG, else ~/.kube/config", () => {
    expect(kubeconfigFiles({ kubeconfig: "/a" }, { KUBECONFIG: "/b" })).toEqual(["/a"]);
    expect(kubeconfigFiles({}, { KUBECONFIG: `/b${delimiter}/c` })).toEqual(["/b", "/c"]);
    expect(kubeconfigFiles({}, { HOME: "/home/me" })).toEqual(["/home/me/.kube/config"]);
  });

  it("merges $KUBECONFIG's files, picks --context and takes the namespace from -n, else the context, else default", () => {
    const dir = mkdtempSync(join(tmpdir(), "kubectl-captf-"));
    try {
      const file = (name: string, context: string, namespace?: string) => {
        const path = join(dir, name);
        const inNamespace = namespace ? `, namespace: ${namespace}` : "";
        writeFileSync(
          path,
          [
            "apiVersion: v1",
            "kind: Config",
            `clusters: [{name: ${context}, cluster: {server: "https://${context}.invalid"}}]`,
            `users: [{name: ${context}, user: {token: t}}]`,
            `contexts: [{name: ${context}, context: {cluster: ${context}, user: ${context}${inNamespace}}}]`,
            `current-context: ${context}`,
          ].join("\n"),
        );
        return path;
      };
      const env = { KUBECONFIG: [file("one", "first", "team-a"), file("two", "second")].join(delimiter) };
      expect(connect({}, env)).toMatchObject({ namespace: "team-a" });
      expect(connect({}, env).kubeConfig.getCurrentCluster()?.server).toBe("https://first.invalid");
      const second = connect({ context: "second" }, env);
      expect([second.kubeConfig.getCurrentCluster()?.server, second.namespace]).toEqual(["https://second.invalid", "default"]);
      expect(connect({ context: "second", namespace: "team-b" }, env).namespace).toBe("team-b");
      expect(() => connect({ context: "third" }, env)).toThrow('context "third" is not in');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("docs", () => {
  const docs = new URL("../../../docs/", import.meta.url);

  it("docs/events.md lists every event reason kubectl captf records, and no other", () => {
    const events = readFileSync(new URL("events.md", docs), "utf8");
    const section = events.split(/^## /m).find((part) => part.startsWith("kubectl captf events")) ?? "";
    const documented = Object.fromEntries(
      [...section.matchAll(/^\| `(\w+)` \| (\w+) \|/gm)].map((match) => [match[1]!, match[2]!] as const),
    );
    expect(documented).toEqual({ ...pluginEventReasons });
  });

  it("docs/kubectl-captf.md has a section per command", () => {
    const page = readFileSync(new URL("kubectl-captf.md", docs), "utf8");
    for (const command of ["describe cluster", "plan show", "plan approve", "restore", "logs"])
      expect(page).toContain(`## \`kubectl captf ${command}`);
  });
});
