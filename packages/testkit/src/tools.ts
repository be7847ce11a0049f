import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The external programs tests run for real, and the environment variable naming each one's path. */
export const toolVariables = {
  tofu: "CAPTF_TOFU",
  terraform: "CAPTF_TERRAFORM",
  etcd: "CAPTF_ETCD",
  "kube-apiserver": "CAPTF_KUBE_APISERVER",
  "kube-controller-manager": "CAPTF_KUBE_CONTROLLER_MANAGER",
  "capi-manager": "CAPTF_CAPI_MANAGER",
  clusterctl: "CAPTF_CLUSTERCTL",
  promtool: "CAPTF_PROMTOOL",
  // Signs module images in the loopback registry for the signature verifier's suites.
  cosign: "CAPTF_COSIGN",
  // A minimal OpenTelemetry Collector (OTLP receiver, file exporter): the tracing suites' real collector.
  otelcol: "CAPTF_OTELCOL",
  // The Prometheus operator's CRDs (tools/install.sh --only prometheus-crds): files, not programs.
  "prometheusrule-crd": "CAPTF_PROMETHEUSRULE_CRD",
  "servicemonitor-crd": "CAPTF_SERVICEMONITOR_CRD",
  // The module images' runtimes for the other architecture (tools/install.sh cross-compiles them).
  "tofu-arm64": "CAPTF_TOFU_ARM64",
  "terraform-arm64": "CAPTF_TERRAFORM_ARM64",
  "tofu-amd64": "CAPTF_TOFU_AMD64",
  "terraform-amd64": "CAPTF_TERRAFORM_AMD64",
} as const;
/** Programs tests take from Debian's packages, found on PATH (scripts/test.sh installs them). */
export const debianTools = {
  umoci: "umoci",
  skopeo: "skopeo",
  "docker-registry": "docker-registry",
  go: "golang",
  patchelf: "patchelf",
  "qemu-aarch64-static": "qemu-user-static",
  chromium: "chromium",
} as const;

export type ToolName = keyof typeof toolVariables | keyof typeof debianTools;

/** Set to 1 to let suites whose tools are missing be skipped (and listed in the summary) instead of failing. */
export const skipMissingToolsVariable = "CAPTF_ALLOW_MISSING_TOOLS";

export class MissingToolError extends Error {
  constructor(readonly tool: ToolName) {
    super(
      (tool in debianTools
        ? `${tool} is not installed: apt-get install -y ${debianTools[tool as keyof typeof debianTools]} (scripts/test.sh does it). `
        : `${tool} is not installed: run tools/install.sh (it builds ` +
          `${tool} into the tools cache), or point ${toolVariables[tool as keyof typeof toolVariables]} at a binary. `) +
        `Set ${skipMissingToolsVariable}=1 to skip the suites that need it instead.`,
    );
    this.name = "MissingToolError";
  }
}

/** The tools cache that tools/install.sh fills. */
export function toolsDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return env.CAPTF_TOOLS_DIR || join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "captf", "tools");
}

function readToolsEnvFile(env: NodeJS.ProcessEnv): Record<string, string> {
  const file = join(toolsDirectory(env), "env");
  if (!existsSync(file)) return {};
  const values: Record<string, string> = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const match = /^export ([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (match) values[match[1]!] = match[2]!.replace(/^'(.*)'$/, "$1");
  }
  return values;
}

/** The absolute path of a tool: its environment variable first, then the tools cache's env file. */
export function findTool(tool: ToolName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (tool in debianTools) return findOnPath(tool, env);
  const variable = toolVariables[tool as keyof typeof toolVariables];
  const path = env[variable] || readToolsEnvFile(env)[variable];
  return path && existsSync(path) ? path : undefined;
}

function findOnPath(command: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(":")) {
    const candidate = join(dir || ".", command);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Like {@link findTool}, but throws {@link MissingToolError} with the fix when the tool is absent. */
export function requireTool(tool: ToolName, env: NodeJS.ProcessEnv = process.env): string {
  const path = findTool(tool, env);
  if (!path) throw new MissingToolError(tool);
  return path;
}

/** Polls `check` until it returns a value, or fails after `timeoutMillis` with what was awaited. */
export async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMillis = 60_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMillis / 1000}s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
