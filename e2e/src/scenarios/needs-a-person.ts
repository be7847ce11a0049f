// What needs a person, from the installed manager on a cluster of its own: its module (the no-op cluster module and one
// file more, an image of its own) replaces a resource when `generation` changes, and reads what it observes of the world
// from the health server (an `observed` value a resource records, and its health). An input change that replaces a
// resource is blocked (DestructivePlanBlocked) until approved; a state Secret that is no gzip is StateUnreadable until
// it is put back; the world changing under a drift check is DriftDetected and, the instance unhealthy, ReadyLost, then
// ReadyRegained once it is well again. The notifications scenario requires each of these among the notifications.
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { waitFor } from "@captf/testkit";
import { buildModuleImage, pushImage, requireTool } from "@captf/testkit/plane";
import { applyObjects } from "../apply.js";
import { demoNamespace } from "../demo-objects.js";
import { startHealthServer } from "../health-server.js";
import type { Cluster, Condition, TerraformObject } from "../objects.js";
import { capi, infra, mergePatch, scenarioTimeout, type Scenario } from "./shared-plane.js";

const name = "needs-a-person";
const poke = "e2e.captf.io/poke";

/** The module's own file: `generation` replaces a resource; `observed_state_url` answers what it observes and its health. */
const moduleFile = `variable "generation" {
  type    = string
  default = "1"
}

variable "observed_state_url" {
  type    = string
  default = null
}

resource "terraform_data" "generation" {
  triggers_replace = var.generation
}

data "terraform_remote_state" "observed" {
  count   = var.observed_state_url == null ? 0 : 1
  backend = "http"
  config = {
    address = "\${var.observed_state_url}/\${var.captf_object.name}"
  }
  defaults = {
    health   = null
    observed = ""
  }
}

locals {
  observed_health = try(data.terraform_remote_state.observed[0].outputs.health, null)
}

resource "terraform_data" "observed" {
  input = try(data.terraform_remote_state.observed[0].outputs.observed, "")
}
`;

/** The no-op cluster module with {@link moduleFile}, its health output the observed one when there is one, built and pushed. */
function pushModuleImage(registry: string, workDir: string, dir: string): string {
  const moduleDir = join(dir, "module");
  cpSync(noopModuleDirectory("cluster"), moduleDir, { recursive: true });
  writeFileSync(join(moduleDir, "needs-a-person.tf"), moduleFile);
  const outputs = join(moduleDir, "outputs.tf");
  const original = readFileSync(outputs, "utf8");
  const edited = original.replace(/(output "health" \{[^}]*?value = )\{/, "$1local.observed_health != null ? local.observed_health : {");
  if (edited === original) throw new Error("the no-op cluster module's health output changed");
  writeFileSync(outputs, edited);
  const tofu = requireTool("tofu");
  const runtimeVersion = /^OpenTofu v(\S+)/m.exec(execFileSync(tofu, ["version"], { encoding: "utf8" }))?.[1] ?? "unknown";
  const layout = join(workDir, "oci");
  buildModuleImage(layout, name, { moduleDir, runtime: tofu, runtimeVersion, role: "cluster" });
  const image = `${registry}/e2e/${name}:v1`;
  pushImage(layout, name, image);
  return image;
}

/** A Cluster of its own (the stand-in control plane, as the demo's) over a TerraformCluster of the module, with the demo's identity. */
function clusterObjects(image: string, observedStateUrl: string): k8s.KubernetesObject[] {
  const metadata = { name, namespace: demoNamespace };
  return [
    {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata,
      spec: {
        controlPlaneRef: { apiGroup: "controlplane.e2e.captf.io", kind: "StandInControlPlane", name },
        infrastructureRef: { apiGroup: infra.group, kind: "TerraformCluster", name },
      },
    },
    {
      apiVersion: `${infra.group}/${infra.version}`,
      kind: "TerraformCluster",
      metadata,
      spec: {
        source: { image },
        identityRef: { name: "noop" },
        variables: { generation: "1", observed_state_url: observedStateUrl },
        // No drift checks until the drift step asks for them: each is a Job.
        drift: { intervalSeconds: 0, action: "Report" },
      },
    },
    { apiVersion: "controlplane.e2e.captf.io/v1alpha1", kind: "StandInControlPlane", metadata, spec: { version: "v1.36.3" } },
  ] as unknown as k8s.KubernetesObject[];
}

export const needsAPerson: Scenario = (shared) => {
  it(
    "tells a person what needs them: a destructive plan blocked, a state unreadable, drift found, Ready lost and regained",
    async () => {
      const { plane, custom, core, events } = shared;
      const dir = mkdtempSync(join(tmpdir(), "captf-e2e-needs-a-person-"));
      const observed = await startHealthServer();
      const cluster = async () =>
        (await custom.getNamespacedCustomObject({ ...infra, plural: "terraformclusters", name })) as TerraformObject;
      const conditionOf = async (type: string): Promise<Condition | undefined> =>
        (await cluster()).status?.conditions?.find((condition) => condition.type === type);
      const patch = (body: Record<string, unknown>) =>
        custom.patchNamespacedCustomObject({ ...infra, plural: "terraformclusters", name, body }, mergePatch);
      const reasonsAndNotes = async () =>
        (await events.listNamespacedEvent({ namespace: demoNamespace, fieldSelector: `regarding.name=${name}` })).items
          .filter((event) => event.reportingController === "captf-manager" && event.regarding?.kind === "TerraformCluster")
          .sort((a, b) => String(a.eventTime).localeCompare(String(b.eventTime)))
          .map((event) => ({ reason: event.reason ?? "", note: event.note ?? "" }));
      const reasons = async () => (await reasonsAndNotes()).map((event) => event.reason);
      /** Where the cluster is: its conditions, its Jobs and the manager's events about it, oldest first. */
      const whereItIs = async () => {
        const conditions = ((await cluster().catch(() => undefined))?.status?.conditions ?? []).map(
          (condition) => `${condition.type}=${condition.status}/${condition.reason}: ${condition.message ?? ""}`,
        );
        const jobs = (await shared.captfJobs())
          .filter((job) => job.metadata?.ownerReferences?.some((owner) => owner.name === name))
          .map((job) => `${job.metadata?.name} ${JSON.stringify(job.status?.conditions?.map((condition) => condition.type) ?? [])}`);
        const recordedEvents = (await reasonsAndNotes()).map((event) => `${event.reason}: ${event.note}`);
        return [`conditions:`, ...conditions, `jobs:`, ...jobs, `events:`, ...recordedEvents].join("\n");
      };
      /** waitFor that says, on a timeout, where the cluster is. */
      const waitWithin = <T>(what: string, check: () => Promise<T | undefined>, timeoutMillis = 180_000): Promise<T> =>
        waitFor(check, timeoutMillis, what).catch(async (error: unknown) => {
          throw new Error(`${(error as Error).message}\n${await whereItIs()}`);
        });
      /** Waits for the manager's event `reason` about the cluster; `nudge` first on each try (a pass to start, say). */
      const recorded = (reason: string, nudge?: () => Promise<unknown>) =>
        waitWithin(`the manager's ${reason} event about TerraformCluster ${name}`, async () => {
          await nudge?.();
          return (await reasons()).includes(reason) ? true : undefined;
        });
      const conditionIs = (type: string, status: string, reason?: string) =>
        waitWithin(`TerraformCluster ${name}'s ${type} ${status}${reason ? `/${reason}` : ""}`, async () => {
          const condition = await conditionOf(type);
          return condition?.status === status && (!reason || condition.reason === reason) ? condition : undefined;
        });
      let pokes = 0;
      let putBack: (() => Promise<void>) | undefined;
      let passed = false;
      // A pass now: the object changed (an annotation of the e2e's), as a person's `kubectl annotate` would.
      const startPass = () => patch({ metadata: { annotations: { [poke]: String(++pokes) } } });
      try {
        const image = pushModuleImage(plane.images.registry, plane.workDir, dir);
        await applyObjects(plane.applier, clusterObjects(image, observed.url));
        await conditionIs("Ready", "True");
        // Its first Ready is Provisioned, not a regained one.
        expect(await reasons()).not.toContain("ReadyRegained");
        // Settled: the stand-in control plane initialized (an input of the module) and the inputs that follow applied.
        await waitWithin(`Cluster ${name}'s control plane initialized`, async () => {
          const owner = (await custom.getNamespacedCustomObject({ ...capi, plural: "clusters", name })) as Cluster;
          return owner.status?.initialization?.controlPlaneInitialized ? true : undefined;
        });
        await conditionIs("InputsApplied", "True");
        await conditionIs("ApplyJobSucceeded", "True");

        // An input change that replaces a resource: blocked, nothing destroyed, until a person approves what the condition names.
        await patch({ spec: { variables: { generation: "2" } } });
        await recorded("DestructivePlanBlocked");
        const blocked = await conditionIs("ApplyJobSucceeded", "False", "DestructivePlanBlocked");
        const approval = /approve it with (captf\.io\/approve-destructive-plan)=(\S+)/.exec(blocked.message ?? "");
        expect(approval).not.toBeNull();
        const blockedEvents = (await reasons()).filter((reason) => reason === "DestructivePlanBlocked").length;
        await patch({ metadata: { annotations: { [approval![1]!]: approval![2]! } } });
        await conditionIs("ApplyJobSucceeded", "True");
        // The approved apply went through: no plan blocked since.
        expect((await reasons()).filter((reason) => reason === "DestructivePlanBlocked")).toHaveLength(blockedEvents);

        // The state Secret's tfstate is no gzip: unreadable, until the bytes are put back.
        const stateSecret = await waitWithin(
          `TerraformCluster ${name}'s state Secret`,
          async () =>
            (await core.listNamespacedSecret({ namespace: demoNamespace, labelSelector: "tfstate=true" })).items.find((secret) =>
              secret.metadata?.ownerReferences?.some((owner) => owner.kind === "TerraformCluster" && owner.name === name),
            ),
          30_000,
        );
        const secretName = stateSecret.metadata!.name!;
        const tfstate = stateSecret.data!.tfstate!;
        const replaceState = async (value: string) => {
          const current = await core.readNamespacedSecret({ namespace: demoNamespace, name: secretName });
          current.data = { ...current.data, tfstate: value };
          await core.replaceNamespacedSecret({ namespace: demoNamespace, name: secretName, body: current });
        };
        putBack = () => replaceState(tfstate);
        await replaceState(Buffer.from("not gzip").toString("base64"));
        await recorded("StateUnreadable", startPass);
        expect(await conditionOf("StateReadable")).toMatchObject({ status: "False", reason: "StateCorrupt" });
        await putBack();
        putBack = undefined;
        await waitWithin(`TerraformCluster ${name}'s StateReadable True again`, async () => {
          await startPass();
          return (await conditionOf("StateReadable"))?.status === "True" ? true : undefined;
        });

        // Drift checks every few seconds; once one has found nothing, the world changes under them and the instance turns
        // unhealthy: drift found, Ready lost. Then it is well again: Ready regained.
        const checkedAfter = Date.now();
        await patch({ spec: { drift: { intervalSeconds: 5 } } });
        await waitWithin(`a drift check of TerraformCluster ${name}`, async () =>
          Date.parse(String(((await cluster()).status as { lastDriftCheck?: string })?.lastDriftCheck)) >= checkedAfter ? true : undefined,
        );
        expect(await reasons()).not.toContain("DriftDetected");
        observed.observe(name, "changed outside captf");
        observed.set(name, { state: "running", healthy: false, message: "the e2e broke this cluster", reasons: ["E2EBroken"] });
        await recorded("DriftDetected");
        await recorded("ReadyLost");
        observed.reset(name);
        await recorded("ReadyRegained");
        await conditionIs("Ready", "True");
        await patch({ spec: { drift: { intervalSeconds: 0 } } });
        // One event per transition, however many passes saw it.
        const seen = await reasons();
        for (const reason of ["StateUnreadable", "DriftDetected", "ReadyLost", "ReadyRegained"])
          expect(seen.filter((candidate) => candidate === reason)).toHaveLength(1);
        passed = true;
      } finally {
        // A state left unreadable would hold the destroy.
        await putBack?.().catch(() => undefined);
        await custom.deleteNamespacedCustomObject({ ...capi, plural: "clusters", name }).catch(() => undefined);
        // A failure above is the news: the cleanup's own timeout is reported only when all else passed.
        await waitWithin(`Cluster ${name} and its objects gone`, async () => {
          const left = await Promise.all(
            [
              [capi, "clusters"],
              [infra, "terraformclusters"],
              [{ group: "controlplane.e2e.captf.io", version: "v1alpha1", namespace: demoNamespace }, "standincontrolplanes"],
            ].map(([api, plural]) =>
              custom
                .getNamespacedCustomObject({ ...(api as typeof capi), plural: plural as string, name })
                .then(() => plural as string)
                .catch(() => undefined),
            ),
          );
          return left.every((plural) => plural === undefined) ? true : undefined;
        }).catch((error: unknown) => {
          if (passed) throw error;
        });
        await observed.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    scenarioTimeout,
  );
};
