import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { stringify } from "yaml";
import { stateSecretSuffix } from "@captf/render";
import { brokerContainerName, buildJob, defaultJobEnvironment, jobName, maxJobNameLength, type JobRequest } from "./build-job.js";

// UPDATE_GOLDEN=1 rewrites testdata/jobs/*.yaml from the current builder.
const update = process.env.UPDATE_GOLDEN === "1";
const goldenDir = fileURLToPath(new URL("../../testdata/jobs/", import.meta.url));

const owner = {
  role: "cluster" as const,
  name: "prod",
  namespace: "team-a",
  uid: "0b7e2b1e-1111-4c1e-9a55-2f1f0e0c0001",
  clusterName: "prod",
};
const base: JobRequest = {
  owner,
  op: "apply",
  attempt: 1,
  image: "ghcr.io/acme/cluster-module:v1.2.0",
  inputsHash: "h2:b5271d9c16db44086c2c8a778931ba12344d81d13c012f718db62bd55f065b4f",
  credentialsSecret: "captf-creds-acme",
};

const cases: [string, JobRequest][] = [
  ["cluster-apply-guarded", { ...base, guard: { approvalHash: base.inputsHash } }],
  ["cluster-apply-approved-plan", { ...base, attempt: 2, expectPlan: "p1:0f3c", guard: { approvalHash: base.inputsHash } }],
  ["cluster-plan", { ...base, op: "plan" }],
  ["cluster-destroy", { ...base, op: "destroy", image: "ghcr.io/acme/cluster-module@sha256:" + "a".repeat(64) }],
  [
    "machine-refresh",
    { ...base, owner: { ...owner, role: "machine", name: "prod-md-0-abcde" }, op: "refresh", tick: "2026-12-02T10:00:00Z" },
  ],
  [
    "machinepool-restore",
    {
      ...base,
      owner: { ...owner, role: "machinepool", name: "workers" },
      op: "restore",
      restore: { chunks: 2, resources: 3, backupSecrets: ["captf-state-backup-x-7", "captf-state-backup-x-7-part-1"], serial: 7 },
      tick: "restore/captf-state-backup-x-7",
      forceUnlock: "4f2a",
    },
  ],
];

describe("buildJob goldens", () => {
  it.each(cases)("%s", (name, request) => {
    const yaml = stringify(buildJob(request));
    const path = `${goldenDir}${name}.yaml`;
    if (update) {
      mkdirSync(goldenDir, { recursive: true });
      writeFileSync(path, yaml);
    }
    expect(yaml).toBe(readFileSync(path, "utf8"));
  });
});

describe("buildJob", () => {
  it("gives a retry and a new tick new names, and the same request the same name", () => {
    expect(jobName(base)).toBe(jobName({ ...base }));
    expect(jobName({ ...base, attempt: 2 })).not.toBe(jobName(base));
    expect(jobName({ ...base, op: "refresh", tick: "t1" })).not.toBe(jobName({ ...base, op: "refresh", tick: "t2" }));
    expect(jobName(base)).toMatch(/^captf-c-prod-apply-a1-[0-9a-f]{6}$/);
  });

  // The public reference (captf-io/cluster-api-provider-terraform, internal/jobs/name.go Hash6, and
  // reference-controller.md 2.2) hashes sha256(inputsHash NUL op NUL attempt NUL tick), tick "" when
  // none: the same object must get the same Job name under either implementation.
  it("hashes the name parts joined by NUL bytes, as the reference does", () => {
    const referenceHash6 = (parts: string[]) => createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 6);
    expect(jobName(base)).toBe(`captf-c-prod-apply-a1-${referenceHash6([base.inputsHash, "apply", "1", ""])}`);
    expect(jobName(base)).toBe("captf-c-prod-apply-a1-792673");
    const refresh = {
      ...base,
      owner: { ...owner, role: "machine" as const, name: "prod-md-0-abcde" },
      op: "refresh" as const,
      attempt: 3,
      tick: "2026-12-02T10:00:00Z",
    };
    expect(jobName(refresh)).toBe(`captf-m-prod-md-0-abcde-refresh-a3-${referenceHash6([base.inputsHash, "refresh", "3", refresh.tick])}`);
    expect(jobName(refresh)).toBe("captf-m-prod-md-0-abcde-refresh-a3-104201");
  });

  it("replaces a long object name by its hash so the pod name stays a valid hostname", () => {
    const long = jobName({ ...base, owner: { ...owner, name: "a".repeat(60) }, attempt: 12 });
    expect(long.length).toBeLessThanOrEqual(maxJobNameLength);
    expect(long).toMatch(/^captf-c-[0-9a-f]{16}-apply-a12-[0-9a-f]{6}$/);
  });

  it("labels the Job and its Pod with the first 16 hex digits of the SHA-256 of a name over 63 characters", () => {
    const name = "n".repeat(253);
    const clusterName = "k".repeat(64);
    const job = buildJob({ ...base, owner: { ...owner, role: "machinepool", name, clusterName } });
    const sha16 = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);
    const expected = {
      "captf.infrastructure.cluster.x-k8s.io/owner-name": sha16(name),
      "cluster.x-k8s.io/cluster-name": sha16(clusterName),
    };
    expect(job.metadata!.labels).toMatchObject(expected);
    expect(job.spec!.template.metadata!.labels).toMatchObject(expected);
    for (const value of Object.values(job.metadata!.labels!)) expect(value.length).toBeLessThanOrEqual(63);
  });

  it("passes the Pod Security restricted profile", () => {
    const pod = buildJob(base).spec!.template.spec!;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    for (const container of [...pod.initContainers!, ...pod.containers]) {
      expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
      expect(container.securityContext?.privileged).toBeUndefined();
    }
    // The volume types the restricted profile allows that a Job uses.
    expect(pod.volumes!.every((volume) => volume.emptyDir || volume.secret || volume.projected)).toBe(true);
  });

  it("gives the module's container no Kubernetes credential: only the broker sidecar mounts the Job's token", () => {
    const pod = buildJob({ ...base, credentialsSecret: "captf-creds-gcp" }).spec!.template.spec!;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.shareProcessNamespace).toBeUndefined();
    const source = pod.containers.find((container) => container.name === "source")!;
    const broker = pod.initContainers!.find((container) => container.name === brokerContainerName)!;
    expect(broker).toMatchObject({ restartPolicy: "Always", command: defaultJobEnvironment.brokerCommand });
    expect(broker.args).toEqual([
      `--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/team-a/prod/${owner.uid}`,
      `--state-suffix=${stateSecretSuffix({ role: "cluster", namespace: "team-a", name: "prod" })}`,
      `--job-name=${jobName(base)}`,
      "--dir=/captf/broker",
    ]);
    const tokenVolumes = pod
      .volumes!.filter((volume) => volume.projected?.sources?.some((source) => source.serviceAccountToken))
      .map((volume) => volume.name);
    expect(tokenVolumes).toEqual(["broker-token"]);
    const mountsOf = (container: typeof source) => (container.volumeMounts ?? []).map((mount) => mount.name);
    expect(mountsOf(broker)).toEqual(["broker", "broker-token"]);
    for (const container of [...pod.initContainers!, ...pod.containers].filter((container) => container !== broker))
      expect(mountsOf(container)).not.toContain("broker-token");
    // Cloud credentials reach the module's container only.
    expect(mountsOf(broker)).not.toContain("creds");
    expect(broker.envFrom).toBeUndefined();
    expect(mountsOf(source)).toContain("creds");
    expect(source.volumeMounts).toContainEqual({ name: "broker", mountPath: "/captf/broker", readOnly: true });
    expect(source.args).toContain("--broker=/captf/broker");
    expect(source.args).toContain("--backend-config=config_path=/captf/broker/kubeconfig");
    expect(source.args!.join(" ")).not.toContain("in_cluster_config");
  });

  it("starts the broker first, from its own image, so it boots while the next init container copies the runner", () => {
    const pod = buildJob(base).spec!.template.spec!;
    expect(pod.initContainers!.map((container) => container.name)).toEqual([brokerContainerName, "runner"]);
    const [broker, copy] = pod.initContainers!;
    // The broker runs the image's bundle, not the copy the runner container writes after it has started.
    expect(broker!.command!.join(" ")).not.toContain("/captf/bin");
    expect(broker!.image).toBe(copy!.image);
  });

  it("keeps the restricted settings over a policy's, drops TF_ and KUBE_ env, and takes the policy's deadline", () => {
    const job = buildJob({
      ...base,
      policy: {
        activeDeadlineSeconds: 1200,
        lockTimeoutSeconds: 60,
        env: [
          { name: "TF_LOG", value: "TRACE" },
          { name: "KUBE_X", value: "1" },
          { name: "HTTPS_PROXY", value: "http://proxy:3128" },
        ],
        securityContext: { allowPrivilegeEscalation: true, runAsUser: 1000 },
      },
    });
    const main = job.spec!.template.spec!.containers[0]!;
    expect(job.spec!.activeDeadlineSeconds).toBe(1200);
    expect(job.spec!.backoffLimit).toBe(0);
    expect(main.args).toContain("--lock-timeout=60s");
    expect(main.env!.map((entry) => entry.name)).not.toContain("TF_LOG");
    expect(main.env!.map((entry) => entry.name)).not.toContain("KUBE_X");
    expect(main.env!.map((entry) => entry.name)).toContain("HTTPS_PROXY");
    expect(main.securityContext).toMatchObject({ allowPrivilegeEscalation: false, runAsUser: 1000 });
  });

  it("gives the runtime TF_ENCRYPTION from a Secret key reference, never as a value, and a policy's TF_ENCRYPTION not at all", () => {
    const policy = { env: [{ name: "TF_ENCRYPTION", value: "literal-key-material" }] };
    const encrypted = buildJob({ ...base, policy, stateEncryption: { secretName: "state-key", key: "TF_ENCRYPTION" } });
    const env = encrypted.spec!.template.spec!.containers[0]!.env!.filter((entry) => entry.name === "TF_ENCRYPTION");
    expect(env).toEqual([{ name: "TF_ENCRYPTION", valueFrom: { secretKeyRef: { name: "state-key", key: "TF_ENCRYPTION" } } }]);
    expect(JSON.stringify(encrypted)).not.toContain("literal-key-material");
    const plain = buildJob({ ...base, policy });
    expect(plain.spec!.template.spec!.containers[0]!.env!.map((entry) => entry.name)).not.toContain("TF_ENCRYPTION");
    // The runner keeps TF_ENCRYPTION, and checks the runtime encrypts, only when told the object encrypts.
    expect(encrypted.spec!.template.spec!.containers[0]!.args).toContain("--state-encryption");
    expect(plain.spec!.template.spec!.containers[0]!.args).not.toContain("--state-encryption");
    // Only the container's environment and arguments change: the name (and with it the inputs hash it carries) stays the same.
    expect(encrypted.metadata!.name).toBe(plain.metadata!.name);
  });
});
