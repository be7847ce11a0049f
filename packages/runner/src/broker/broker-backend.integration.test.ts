import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { renderBackendRoot } from "@captf/render";
import { describeWithTools, moduleRuntimes, runtimeNames, sharedControlPlane } from "@captf/testkit";
import type { EventRecorder } from "../events.js";
import { RunnerFixture, stateInSecret as readState } from "../runner-fixture.test-support.js";
import { brokerScope } from "./policy.js";
import { startBroker, type RunningBroker } from "./server.js";

// Every operation of each runtime's kubernetes backend through the state broker, on the real API
// server, with the ServiceAccount and ClusterRole captf ships for runners: what each one asks for,
// measured (docs/security.md lists it), and none of it refused.
const runnerRole = fileURLToPath(new URL("../../../controller/config/rbac/runner_role.yaml", import.meta.url));

/** A request as the broker logged it, its object names replaced by what they are. */
type Shape = string;

for (const runtime of runtimeNames) {
  describeWithTools(
    [runtime, "etcd", "kube-apiserver", "kube-controller-manager"],
    `the state broker under ${moduleRuntimes[runtime].displayName}'s kubernetes backend`,
    () => {
      const namespace = `broker-${runtime}-${Date.now().toString(36)}`;
      const suffix = "0b0ca7e50b0ca7e5-m";
      const object = {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformMachine",
        namespace,
        name: "m-1",
        uid: "00000000-0000-4000-8000-000000000001",
      };
      const scope = brokerScope(object, suffix);
      let fixture: RunnerFixture;
      let core: k8s.CoreV1Api;
      let coordination: k8s.CoordinationV1Api;
      let broker: RunningBroker;
      let requests: Shape[] = [];
      const refusals: string[] = [];
      const brokerDir = () => join(fixture.base, "broker");
      const backendConfig = () => [`config_path=${join(brokerDir(), "kubeconfig")}`, `namespace=${namespace}`, `secret_suffix=${suffix}`];
      const brokerArgs = () => [
        `--broker=${brokerDir()}`,
        `--event-object=${object.apiVersion}/${object.kind}/${namespace}/${object.name}/${object.uid}`,
        "--job-name=captf-m-m-1-apply-a1-abcdef",
      ];
      const measured = new Map<string, Set<Shape>>();
      const shape = (method: string, path: string, query: string) => {
        const general = path.replaceAll(namespace, "{ns}").replace(scope.lockLease, "{lock}").replace(scope.stateSecret, "{state}");
        return `${method} ${general}${query ? `?${[...new URLSearchParams(query).keys()].join("&")}` : ""}`;
      };
      const take = (op: string) => {
        measured.set(op, new Set([...(measured.get(op) ?? []), ...requests]));
        requests = [];
      };

      beforeAll(async () => {
        const plane = sharedControlPlane();
        const kc = new k8s.KubeConfig();
        kc.loadFromFile(plane.kubeconfigPath);
        core = kc.makeApiClient(k8s.CoreV1Api);
        coordination = kc.makeApiClient(k8s.CoordinationV1Api);
        const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
        await core.createNamespace({ body: { metadata: { name: namespace } } });
        // The shipped runner permissions, bound as the manager binds them in a namespace.
        const role = k8s.loadYaml<k8s.V1ClusterRole>(await readFile(runnerRole, "utf8"));
        await rbac.createClusterRole({ body: { ...role, metadata: { name: `${namespace}-runner` } } });
        await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "captf-runner" } } });
        await rbac.createNamespacedRoleBinding({
          namespace,
          body: {
            metadata: { name: "captf-runner" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${namespace}-runner` },
            subjects: [{ kind: "ServiceAccount", name: "captf-runner", namespace }],
          },
        });
        const token = (
          await core.createNamespacedServiceAccountToken({
            name: "captf-runner",
            namespace,
            body: { spec: { audiences: [], expirationSeconds: 3600 } },
          })
        ).status!.token;
        // Another object's state and a workload cluster's kubeconfig carry the labels the backend lists by.
        for (const name of ["tfstate-default-0therobject0000-m", "demo-kubeconfig"]) {
          await core.createNamespacedSecret({
            namespace,
            body: {
              metadata: { name, labels: { tfstate: "true", tfstateSecretSuffix: suffix, tfstateWorkspace: "default" } },
              stringData: { tfstate: "canary-other-object" },
            },
          });
        }
        fixture = await RunnerFixture.create(
          "module",
          {
            variables: { name: { type: "string" }, generation: { type: "number" }, sleep_seconds: { type: "number" } },
            outputs: ["provider_id", "generation"],
          },
          runtime,
        );
        await rm(join(fixture.configDir, "backend_override.tf.json"));
        const noEvents: EventRecorder = { emit() {}, async close() {} };
        await writeFile(join(fixture.base, "job-token"), token!);
        broker = await startBroker({
          scope,
          dir: brokerDir(),
          upstream: { server: plane.server, tokenFile: join(fixture.base, "job-token"), ca: await readFile(plane.caFile) },
          events: noEvents,
          logRequests: true,
          log: (_level, message, fields) => {
            if (message === "request refused") refusals.push(JSON.stringify(fields));
            if (message === "request") requests.push(shape(String(fields!.method), String(fields!.path), String(fields!.query ?? "")));
          },
        });
      }, 60_000);

      afterAll(async () => {
        await broker?.close();
        await fixture?.remove();
        await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
      });

      const stateInSecret = () => readState(core, namespace, suffix);

      it("applies, plans, refreshes, finds drift and destroys through the broker", async () => {
        await fixture.setInputs({ name: "one", generation: 1, sleep_seconds: 0 });
        for (const op of ["apply", "plan", "drift", "refresh"]) {
          const run = await fixture.run(op, {
            backendConfig: backendConfig(),
            args: [...brokerArgs(), ...(op === "apply" ? ["--guard-deletes"] : [])],
          });
          expect({ op, error: run.result.error }).toEqual({ op, error: null });
          take(op);
        }
        expect((await stateInSecret()).outputs.provider_id?.value).toBe("noop:///one");
      }, 120_000);

      it("gets past a stale lock with --force-unlock, and restores a backup, through the broker", async () => {
        await fixture.setInputs({ name: "one", generation: 1, sleep_seconds: 30 });
        // A real apply of the runtime takes the lock, then dies without releasing it.
        const holder = await fixture.leaveStaleLock(backendConfig(), coordination, namespace, suffix);
        take("apply (killed)");

        await fixture.setInputs({ name: "two", generation: 1, sleep_seconds: 0 });
        const unlocked = await fixture.run("apply", {
          backendConfig: backendConfig(),
          args: [...brokerArgs(), "--lock-timeout=1s", `--force-unlock=${holder}`],
        });
        expect(unlocked.result.error).toBeNull();
        expect(unlocked.result.steps.map((step) => step.name)).toEqual(["init", "force-unlock", "validate", "apply"]);
        take("force-unlock");

        const backup = await stateInSecret();
        const restoreConfig = join(fixture.base, "restore-config");
        await mkdir(join(restoreConfig, "restore"), { recursive: true });
        for (const [file, text] of Object.entries(renderBackendRoot()) as [string, string][])
          await writeFile(join(restoreConfig, file), text);
        await writeFile(join(restoreConfig, "restore", "0"), backup.gzip);
        const restored = await fixture.run("restore", {
          backendConfig: backendConfig(),
          configDir: restoreConfig,
          workdir: join(fixture.base, "restore-work"),
          args: [...brokerArgs(), "--restore-chunks=1", "--restore-resources=2"],
        });
        expect(restored.result.error).toBeNull();
        take("restore");

        const destroyed = await fixture.run("destroy", { backendConfig: backendConfig(), args: brokerArgs() });
        expect(destroyed.result.error).toBeNull();
        take("destroy");
      }, 120_000);

      it("was refused nothing, asked for nothing beyond this object's state, lock and events, and left the others alone", async () => {
        const summary = await broker.close();
        expect({ refusals, summary }).toMatchObject({ refusals: [], summary: { refused: 0, refusedByTarget: {} } });
        const all = new Set([...measured.values()].flatMap((shapes) => [...shapes]));
        // What the backends were measured to ask (docs/security.md): nothing else may appear.
        const allowed = new Set([
          "GET /api/v1/namespaces/{ns}/secrets?labelSelector",
          "GET /api/v1/namespaces/{ns}/secrets/{state}",
          "POST /api/v1/namespaces/{ns}/secrets",
          "PUT /api/v1/namespaces/{ns}/secrets/{state}",
          "GET /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{lock}",
          "POST /apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
          "PUT /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{lock}",
          "POST /apis/events.k8s.io/v1/namespaces/{ns}/events",
        ]);
        process.stdout.write(
          `${moduleRuntimes[runtime].displayName} through the ` +
            `broker:\n${[...measured].map(([op, shapes]) => `  ${op}: ${[...shapes].sort().join(", ")}`).join("\n")}\n`,
        );
        expect([...all].filter((request) => !allowed.has(request))).toEqual([]);
        for (const name of ["tfstate-default-0therobject0000-m", "demo-kubeconfig"]) {
          expect(Buffer.from((await core.readNamespacedSecret({ name, namespace })).data!.tfstate!, "base64").toString()).toBe(
            "canary-other-object",
          );
        }
      });
    },
  );
}
