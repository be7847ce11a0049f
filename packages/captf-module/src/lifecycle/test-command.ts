// `captf-module test`: flags to lifecycle options, the real client and clock, and the three reports.
import { writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { Role } from "@captf/contract/roles";
import { exitCodes, report, UsageError, type CliIo, type OutputFormat } from "../io.js";
import { kubernetesClient, systemClock, type Clock, type LifecycleClient } from "./client.js";
import { runLifecycle } from "./driver.js";
import type { LifecycleOptions } from "./objects.js";
import { lifecycleJunit, lifecycleText } from "./report.js";

export interface TestFlags {
  kubeconfig?: string;
  context?: string;
  namespace: string;
  role: Role;
  image: string;
  name?: string;
  cluster?: string;
  identity?: string;
  variables?: string;
  changeVariables?: string;
  replicas: number;
  driftInterval: number;
  stepTimeout: number;
  poll: number;
  junit?: string;
  format: OutputFormat;
}

function jsonObject(flag: string, value: string | undefined): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new UsageError(`--${flag}: not JSON: ${value}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new UsageError(`--${flag}: write a JSON object, {"name": value}`);
  return parsed as Record<string, unknown>;
}

/** The options of a run, or the usage error that says which flag is missing. */
export function lifecycleOptions(flags: TestFlags, now: number): LifecycleOptions {
  if (flags.role !== "cluster" && !flags.cluster)
    throw new UsageError(`--role ${flags.role} needs --cluster: the Cluster (its TerraformCluster Ready) the ${flags.role} joins`);
  if (flags.role === "cluster" && !flags.identity)
    throw new UsageError("--role cluster needs --identity: the TerraformClusterIdentity the TerraformCluster's Jobs run with");
  for (const [flag, value, min] of [
    ["replicas", flags.replicas, 1],
    ["drift-interval", flags.driftInterval, 1],
    ["step-timeout", flags.stepTimeout, 1],
    ["poll", flags.poll, 0.1],
  ] as const)
    if (!Number.isFinite(value) || value < min) throw new UsageError(`--${flag} ${value}: at least ${min}`);
  const name = flags.name ?? `captf-test-${flags.role}-${now.toString(36)}`;
  if (!/^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$/.test(name))
    throw new UsageError(`--name ${name}: lowercase letters, digits and -, at most 52 characters, starting and ending alphanumeric`);
  return {
    role: flags.role,
    namespace: flags.namespace,
    image: flags.image,
    name,
    ...(flags.cluster ? { cluster: flags.cluster } : {}),
    ...(flags.identity ? { identity: flags.identity } : {}),
    ...(flags.variables ? { variables: jsonObject("variables", flags.variables) } : {}),
    ...(flags.changeVariables ? { changeVariables: jsonObject("change-variables", flags.changeVariables) } : {}),
    replicas: flags.replicas,
    driftIntervalSeconds: flags.driftInterval,
    stepTimeoutSeconds: flags.stepTimeout,
    pollSeconds: flags.poll,
  };
}

/** The command; `connect` and `clock` are the real ones unless a test passes its own. */
export async function runTest(
  io: CliIo,
  flags: TestFlags,
  connect: (kubeconfig: string, context?: string) => LifecycleClient = kubernetesClient,
  clock: Clock = systemClock,
): Promise<number> {
  const options = lifecycleOptions(flags, clock.now());
  const env = io.env ?? process.env;
  const cwd = io.cwd ?? process.cwd();
  const kubeconfig = flags.kubeconfig
    ? resolve(cwd, flags.kubeconfig)
    : (env.KUBECONFIG?.split(":").find(Boolean) ?? join(env.HOME ?? homedir(), ".kube", "config"));
  const result = await runLifecycle(connect(kubeconfig, flags.context), clock, options);
  if (flags.junit) writeFileSync(resolve(cwd, flags.junit), lifecycleJunit(result));
  report(io, flags.format, result, lifecycleText(result));
  return result.passed ? exitCodes.ok : exitCodes.failed;
}
