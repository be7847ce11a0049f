// Secrets: the demo's canary values (the identity's credential, a variable, the bootstrap data)
// appear in no log, event, Job, Pod or captf status of everything the earlier scenarios ran.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { labels } from "@captf/contract/api";
import { demoNamespace } from "../demo-objects.js";
import { infra, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const noSecretLeaks: Scenario = (shared) => {
  it(
    "lets no secret value reach a log, an event, a status, a Job or a termination message",
    async () => {
      const { plane, custom, core, batch, secrets, list } = shared;
      const haystacks: [string, string][] = [];
      haystacks.push(["manager log", await plane.managerLog()]);
      for (const file of readdirSync(join(plane.kubelet.workDir, "logs")))
        haystacks.push([`container log ${file}`, readFileSync(join(plane.kubelet.workDir, "logs", file), "utf8")]);
      haystacks.push(["events", JSON.stringify((await core.listEventForAllNamespaces()).items)]);
      haystacks.push(["events.k8s.io", JSON.stringify(await plane.kubeConfig.makeApiClient(k8s.EventsV1Api).listEventForAllNamespaces())]);
      haystacks.push(["Jobs", JSON.stringify((await batch.listJobForAllNamespaces()).items)]);
      haystacks.push(["Pods", JSON.stringify((await core.listPodForAllNamespaces()).items)]);
      for (const plural of ["terraformclusters", "terraformmachines", "terraformmachinepools"])
        haystacks.push([plural, JSON.stringify(await list(infra, plural))]);
      haystacks.push([
        "terraformclusteridentities",
        JSON.stringify(
          await custom.listClusterCustomObject({ group: infra.group, version: infra.version, plural: "terraformclusteridentities" }),
        ),
      ]);
      expect(haystacks.length).toBeGreaterThan(8);
      for (const [where, text] of haystacks) {
        for (const [name, value] of Object.entries(secrets) as [string, string][]) {
          if (text.includes(value) || text.includes(Buffer.from(value).toString("base64")))
            throw new Error(`the ${name} canary appears in ${where}`);
        }
      }
      // The canaries are really in play: each sits in the Secret it was put in.
      const mirror = (await core.listNamespacedSecret({ namespace: demoNamespace, labelSelector: labels.mirrored })).items;
      expect(mirror.map((secret) => Buffer.from(secret.data?.NOOP_API_TOKEN ?? "", "base64").toString())).toContain(secrets.credential);
    },
    scenarioTimeout,
  );
};
