// The bench's stand-in for a kubelet running the manager's apply Jobs, synthetically: there is no
// kubelet on the plane, so kube-controller-manager's Job controller creates each Job's Pod and it
// stays Pending. For each such Pod this writes what a successful `runner run --op=apply` of the
// no-op machine module leaves behind, in the order the real run does:
//
//  1. waits for the Job's per-run Secret (a real Pod cannot start before its `config` volume exists);
//  2. writes the OpenTofu kubernetes-backend state Secret `tfstate-default-<suffix>`: gzip of a
//     version-4 state JSON with the machine role's outputs (as packages/module-noop/machine
//     outputs them), labelled as the backend labels it;
//  3. patches the Pod's status through the `pods/status` subresource: phase Succeeded, the
//     `runner` init container and the `source` container terminated with exit code 0, `source`
//     carrying the runner's result document as its termination message.
//
// kube-controller-manager's Job controller then counts the succeeded Pod and marks the Job
// Complete, as it would with a kubelet. The Jobs are watched to check that, and to count them.
import { createHash, randomUUID } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { loadController, loadDependency } from "./controller-packages.mjs";
import { types } from "./controller-fixtures.mjs";

const { Informer } = await loadController();
// By status code, not the controller's helpers: a test may pass a client built from the sources, whose errors are not dist's class.
const isNotFound = (error) => error?.statusCode === 404;
const isConflict = (error) => error?.statusCode === 409;
const { labels } = await loadDependency("@captf/contract/api");
const { stateSecretName, stateSecretSuffix, stateSecretLabels, stateWorkspace } = await loadDependency("@captf/render");

/** The machine role's outputs of packages/module-noop/machine (failure_domain is null, so absent from state). */
export function noopMachineOutputs(namespace, machineName) {
  return {
    provider_id: { value: `noop:///${namespace}/${machineName}`, type: "string" },
    addresses: {
      value: [{ type: "InternalIP", address: "10.0.0.1" }],
      type: ["tuple", [["object", { type: "string", address: "string" }]]],
    },
    interruptible: { value: false, type: "bool" },
    health: {
      value: { state: "running", healthy: true, message: null, reasons: [] },
      type: ["object", { state: "string", healthy: "bool", message: "string", reasons: ["tuple", []] }],
    },
  };
}

/** A version-4 state as OpenTofu writes it: one terraform_data standing in for the instance; a new lineage unless it rewrites a state. */
export function noopMachineState(namespace, machineName, serial = 1, lineage = randomUUID()) {
  return {
    version: 4,
    terraform_version: "1.12.6",
    serial,
    lineage,
    outputs: noopMachineOutputs(namespace, machineName),
    resources: [
      {
        module: "module.role",
        mode: "managed",
        type: "terraform_data",
        name: "instance",
        provider: 'provider["terraform.io/builtin/terraform"]',
        instances: [
          {
            schema_version: 0,
            attributes: {
              id: randomUUID(),
              input: { value: { name: machineName }, type: ["object", { name: "string" }] },
              output: null,
              triggers_replace: null,
            },
            sensitive_attributes: [],
          },
        ],
      },
    ],
    check_results: null,
  };
}

/** The runner's result document of a successful apply, destroy or drift check (packages/contract/src/run-result.ts). */
export function applyResult(image, op = "apply") {
  return JSON.stringify({
    version: 1,
    op,
    image: { ref: image, providersMirror: false },
    runtime: { command: ["/captf/runtime"], version: "1.12.6" },
    steps: [
      { name: "init", exit: 0, seconds: 0.8 },
      { name: "validate", exit: 0, seconds: 0.3 },
      { name: op === "drift" ? "plan" : op, exit: 0, seconds: 0.5 },
    ],
    // A drift check finds none; it changes nothing.
    drift: op === "drift" ? { detected: false, add: 0, change: 0, destroy: 0, resources: [] } : null,
    error: null,
    ...(op === "drift" ? {} : { changes: op === "destroy" ? { add: 0, change: 0, destroy: 1 } : { add: 1, change: 0, destroy: 0 } }),
  });
}

/** The image ID a container runtime reports after pulling `image`: its repository by digest. */
const imageId = (image) => `${image.replace(/:[\w][\w.-]*$/, "")}@sha256:${createHash("sha256").update(image).digest("hex")}`;
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));
const isoSeconds = (millis) => new Date(millis).toISOString().replace(/\.\d+Z$/, "Z");

/**
 * Starts completing the Pods of TerraformMachine Jobs in `namespace` with `client` (a KubeClient
 * straight to the API server, not through the counting proxy). `jobSeconds` delays each
 * completion after its Pod appeared, as a run's duration (Pods run side by side, as on kubelets:
 * `concurrency` bounds only the API calls that complete them). A Pod for which `hold(pod)` is true
 * is left running (a drill deletes it).
 */
export function startJobCompleter({ client, namespace, logger, concurrency = 8, jobSeconds = 0, hold = () => false }) {
  const stats = {
    jobs: new Map(), // name → { owner, op, createdAt, podSeenAt?, podSucceededAt?, completeAt?, failedAt?, bookkeptAt? }
    podsCompleted: 0,
    errors: [],
    runSecretWaitMillis: [],
  };
  const handled = new Set();
  const timers = new Set();
  const queue = [];
  const idle = []; // resolvers of workers waiting for a Pod
  let stopped = false;

  const jobs = new Informer({ client, type: types.job, namespace, logger, resyncPeriodMillis: 0 });
  const onJob = (job) => {
    const name = job.metadata.name;
    if (job.metadata.labels?.[labels.ownerKind] !== "TerraformMachine") return;
    let entry = stats.jobs.get(name);
    if (!entry) {
      entry = { owner: job.metadata.labels[labels.ownerName], op: job.metadata.labels[labels.op], createdAt: Date.now() };
      stats.jobs.set(name, entry);
    }
    const done = (type) => job.status?.conditions?.some((c) => c.type === type && c.status === "True");
    if (!entry.completeAt && done("Complete")) entry.completeAt = Date.now();
    if (!entry.failedAt && done("Failed")) entry.failedAt = Date.now();
    if (!entry.bookkeptAt && job.metadata.annotations?.["captf.io/bookkept"] === "true") entry.bookkeptAt = Date.now();
  };
  jobs.addHandlers({ add: onJob, update: (_old, job) => onJob(job) });

  const pods = new Informer({ client, type: types.pod, namespace, logger, resyncPeriodMillis: 0 });
  const onPod = (pod) => {
    const meta = pod.metadata;
    if (meta.labels?.[labels.ownerKind] !== "TerraformMachine" || handled.has(meta.uid)) return;
    if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed" || meta.deletionTimestamp || hold(pod)) return;
    handled.add(meta.uid);
    const seenAt = Date.now();
    const entry = stats.jobs.get(meta.labels?.["job-name"]);
    if (entry && !entry.podSeenAt) entry.podSeenAt = seenAt;
    // The run: a timer, not a worker asleep, so that more Pods run at once than there are workers.
    const enqueue = () => {
      if (stopped) return;
      queue.push({ pod, seenAt });
      idle.shift()?.();
    };
    if (jobSeconds <= 0) return enqueue();
    const timer = setTimeout(() => {
      timers.delete(timer);
      enqueue();
    }, jobSeconds * 1000);
    timers.add(timer);
  };
  pods.addHandlers({ add: onPod, update: (_old, pod) => onPod(pod) });

  async function complete({ pod, seenAt }) {
    const namespace = pod.metadata.namespace;
    const jobName = pod.metadata.labels["job-name"] ?? pod.metadata.labels["batch.kubernetes.io/job-name"];
    const owner = pod.metadata.labels[labels.ownerName];
    const op = pod.metadata.labels[labels.op] ?? "apply";

    // 1. The per-run Secret the Pod mounts.
    const volume = pod.spec.volumes?.find((v) => v.name === "config")?.secret?.secretName;
    if (volume) {
      const started = Date.now();
      for (;;) {
        if (stopped) return;
        const present = await client.get(types.secret, namespace, volume).then(
          () => true,
          (error) => (isNotFound(error) ? false : Promise.reject(error)),
        );
        if (present) break;
        if (Date.now() - started > 60_000) throw new Error(`Pod ${pod.metadata.name}: its run Secret ${volume} never appeared`);
        await sleep(100);
      }
      stats.runSecretWaitMillis.push(Date.now() - started);
    }

    // 2. The state Secret, as the kubernetes backend writes it (a drift check only reads it).
    const suffix = stateSecretSuffix({ role: "machine", namespace, name: owner });
    const name = stateSecretName(suffix);
    const secretLabels = {
      ...stateSecretLabels({ role: "machine", namespace, name: owner, clusterName: pod.metadata.labels[labels.clusterName] ?? "" }),
      "app.kubernetes.io/managed-by": "terraform",
      tfstate: "true",
      tfstateSecretSuffix: suffix,
      tfstateWorkspace: stateWorkspace,
    };
    const body = (state, resourceVersion, annotations) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, labels: secretLabels, ...(annotations ? { annotations } : {}), ...(resourceVersion ? { resourceVersion } : {}) },
      type: "Opaque",
      data: { tfstate: gzipSync(JSON.stringify(state)).toString("base64") },
    });
    // A destroy leaves the state with no resources and no outputs, as OpenTofu does.
    const stateOf = (serial, lineage) =>
      op === "destroy"
        ? { ...noopMachineState(namespace, owner, serial, lineage), outputs: {}, resources: [] }
        : noopMachineState(namespace, owner, serial, lineage);
    if (op !== "drift")
      try {
        await client.create(types.secret, namespace, body(stateOf(1)));
      } catch (error) {
        if (!isConflict(error)) throw error;
        // A later run of the same machine: the backend rewrites the Secret with serial + 1, in the same lineage.
        const current = await client.get(types.secret, namespace, name);
        const previous = JSON.parse(gunzipSync(Buffer.from(current.data.tfstate, "base64")));
        await client.replace(
          types.secret,
          namespace,
          name,
          body(stateOf(Number(previous.serial) + 1, previous.lineage), current.metadata.resourceVersion, current.metadata.annotations),
        );
      }

    // 3. The Pod's status, through the status subresource, as a kubelet reports a finished Pod.
    const now = Date.now();
    const source = pod.spec.containers.find((c) => c.name === "source");
    const init = pod.spec.initContainers?.find((c) => c.name === "runner");
    const terminated = (message) => ({
      terminated: {
        exitCode: 0,
        reason: "Completed",
        startedAt: isoSeconds(seenAt),
        finishedAt: isoSeconds(now),
        ...(message ? { message } : {}),
      },
    });
    const condition = (type, status, reason) => ({ type, status, lastTransitionTime: isoSeconds(now), ...(reason ? { reason } : {}) });
    await client.patch(
      types.pod,
      namespace,
      pod.metadata.name,
      {
        status: {
          phase: "Succeeded",
          startTime: isoSeconds(seenAt),
          hostIP: "127.0.0.1",
          podIP: "127.0.0.1",
          conditions: [
            condition("PodReadyToStartContainers", "False"),
            condition("Initialized", "True", "PodCompleted"),
            condition("Ready", "False", "PodCompleted"),
            condition("ContainersReady", "False", "PodCompleted"),
          ],
          ...(init
            ? {
                initContainerStatuses: [
                  { name: "runner", image: init.image, imageID: "", ready: false, restartCount: 0, started: false, state: terminated() },
                ],
              }
            : {}),
          containerStatuses: [
            {
              name: "source",
              image: source.image,
              imageID: imageId(source.image),
              ready: false,
              restartCount: 0,
              started: false,
              state: terminated(applyResult(source.image, op)),
            },
          ],
        },
      },
      "strategic",
      { subresource: "status" },
    );
    stats.podsCompleted++;
    const entry = jobName ? stats.jobs.get(jobName) : undefined;
    if (entry) entry.podSucceededAt = Date.now();
    else if (jobName) stats.jobs.set(jobName, { owner, op: pod.metadata.labels[labels.op], createdAt: seenAt, podSucceededAt: Date.now() });
  }

  const workers = Array.from({ length: concurrency }, async () => {
    while (!stopped) {
      const item = queue.shift();
      if (!item) {
        await new Promise((resolve) => idle.push(resolve));
        continue;
      }
      try {
        await complete(item);
      } catch (error) {
        // An API server outage (the fault drills) is retried, as a kubelet reports again; a bug is not.
        const unreachable =
          /ECONNREFUSED|ECONNRESET|socket hang up|aborted/.test(`${error?.code} ${error?.message}`) || error?.statusCode >= 500;
        if (unreachable && (item.retries ?? 0) < 30) {
          stats.retries = (stats.retries ?? 0) + 1;
          setTimeout(() => {
            queue.push({ ...item, retries: (item.retries ?? 0) + 1 });
            idle.shift()?.();
          }, 1000);
        } else stats.errors.push(`${item.pod.metadata.name}: ${error.message}`);
      }
    }
  });

  jobs.start();
  pods.start();
  return {
    stats,
    async synced() {
      await Promise.all([jobs.waitForSync(60_000), pods.waitForSync(60_000)]);
    },
    async stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      queue.length = 0;
      for (const resolve of idle.splice(0)) resolve();
      await Promise.race([Promise.all(workers.map((w) => w.catch(() => {}))), sleep(2000)]);
      await Promise.all([jobs.stop(), pods.stop()]);
    },
  };
}
