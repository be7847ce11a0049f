// Teardown, last: deleting the demo Cluster removes every captf object, Job, state Secret, Lease
// and runner RoleBinding, and no write of the whole run was refused by the manager's RBAC.
import { expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@captf/testkit";
import { labels } from "@captf/contract/api";
import { demoClusterName, demoNamespace } from "../demo-objects.js";
import { capi, infra, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const teardown: Scenario = (shared) => {
  it(
    "removes everything of captf when the Cluster is deleted",
    async () => {
      const { plane, custom, core, list, captfJobs, progressTable } = shared;
      await custom.deleteNamespacedCustomObject({ ...capi, plural: "clusters", name: demoClusterName });
      await waitFor(
        async () => ((await list(capi, "clusters")).length === 0 ? true : undefined),
        300_000,
        `the Cluster gone\n${await progressTable()}`,
      ).catch(async (error) => {
        throw new Error(
          `${(error as Error).message}\nnow:\n${await progressTable()}\n` +
            `manager:\n${(await plane.managerLog()).split("\n").slice(-30).join("\n")}`,
        );
      });
      for (const plural of ["terraformclusters", "terraformmachines", "terraformmachinepools"])
        expect(await list(infra, plural)).toEqual([]);
      for (const plural of ["machines", "machinepools", "machinedeployments", "machinesets"]) expect(await list(capi, plural)).toEqual([]);
      // Jobs and their Pods go with their owners (garbage collection), state and leases with the destroy.
      await waitFor(async () => ((await captfJobs()).length === 0 ? true : undefined), 120_000, "captf Jobs garbage-collected");
      const coordination = plane.kubeConfig.makeApiClient(k8s.CoordinationV1Api);
      const rbac = plane.kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
      const findLeftovers = async () => {
        const found: string[] = [];
        for (const secret of (await core.listNamespacedSecret({ namespace: demoNamespace })).items) {
          const name = secret.metadata!.name!;
          if (name.startsWith("tfstate-") || name.startsWith("captf-") || secret.metadata!.labels?.[labels.managed])
            found.push(`Secret/${name}`);
        }
        for (const lease of (await coordination.listNamespacedLease({ namespace: demoNamespace })).items)
          found.push(`Lease/${lease.metadata!.name}`);
        for (const binding of (await rbac.listNamespacedRoleBinding({ namespace: demoNamespace })).items)
          if (binding.metadata!.name!.startsWith("captf")) found.push(`RoleBinding/${binding.metadata!.name}`);
        return found;
      };
      // The namespace sweep runs right after the last finalizer goes, beside Cluster API's own deletion: give it a minute.
      let leftovers = await findLeftovers();
      for (const deadline = Date.now() + 60_000; leftovers.length > 0 && Date.now() < deadline; leftovers = await findLeftovers())
        await new Promise((resolve) => setTimeout(resolve, 1000));
      if (leftovers.length > 0)
        throw new Error(
          `left behind: ${leftovers.join(", ")}\nmanager:\n${(await plane.managerLog())
            .split("\n")
            .filter((line) => /sweep|RoleBinding|finalizer/i.test(line))
            .slice(-30)
            .join("\n")}`,
        );
      // Every write of the whole run (scaling, rolls, remediation, write-back, Pod and Job deletes, destroys, the
      // sweep, identity status) went through the shipped ServiceAccount's RBAC, every manager Pod's log included.
      const refused = (await plane.managerLog()).split("\n").filter((line) => /forbidden/i.test(line));
      expect(refused).toEqual([]);
    },
    scenarioTimeout,
  );
};
