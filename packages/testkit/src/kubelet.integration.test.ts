import { execFileSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { groupVersion, labels } from "@captf/contract/api";
import { cpuHierarchy } from "./container-cpu.js";
import { parseRunResult } from "@captf/contract/run-result";
import { freeLoopbackPort } from "./control-plane.js";
import { describeWithTools } from "./integration.js";
import {
  containerEnvironment,
  containerUser,
  expandReferences,
  isLoopbackReference,
  launchScript,
  logTail,
  PodWaiting,
  prepareRunnerImageRoot,
  projectKeys,
  resolveContainerCommand,
  resolveInRoot,
  setprivArgs,
  startChrootKubelet,
  type ChrootKubelet,
  type HostPrograms,
  type ImageResolver,
} from "./kubelet.js";
import { buildModuleImage, pushImage, startLocalRegistry, type LocalRegistry } from "./oci.js";
import { sharedControlPlane } from "./shared-control-plane.js";
import { requireTool } from "./tools.js";

/** Copies this machine's program `name` into a root at /usr/bin, with the libraries ldd names. */
function placeHostProgram(rootDir: string, name: string): void {
  const program = realpathSync(execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim());
  const place = (from: string, to: string) => {
    mkdirSync(dirname(to), { recursive: true });
    cpSync(from, to);
  };
  place(program, join(rootDir, "usr/bin", name));
  for (const line of execFileSync("ldd", [program], { encoding: "utf8" }).split("\n")) {
    const path = /=>\s+(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)\s+\(/.exec(line)?.[1];
    if (path) place(realpathSync(path), join(rootDir, path));
  }
}

describe("the chroot kubelet's pure parts", () => {
  it("expands $(VAR) like Kubernetes: known names, $$ escapes, unknown names kept", () => {
    const lookup = (name: string) => ({ A: "1", B: "two" })[name];
    expect(expandReferences("x$(A)-$(B)-$$(A)-$(C)-$(A", lookup)).toBe("x1-two-$(A)-$(C)-$(A");
    expect(expandReferences("$", lookup)).toBe("$");
    expect(expandReferences("a$b", lookup)).toBe("a$b");
  });

  it("lets command replace the entrypoint and args the cmd", () => {
    const image = { entrypoint: ["/entry"], cmd: ["default"] };
    expect(resolveContainerCommand({}, image)).toEqual(["/entry", "default"]);
    expect(resolveContainerCommand({ args: ["x"] }, image)).toEqual(["/entry", "x"]);
    expect(resolveContainerCommand({ command: ["/bin/run"] }, image)).toEqual(["/bin/run"]);
    expect(resolveContainerCommand({ command: ["/bin/run"], args: ["y"] }, image)).toEqual(["/bin/run", "y"]);
  });

  it("resolves paths inside a root without leaving it through symbolic links", () => {
    const root = mkdtempSync(join(tmpdir(), "captf-resolve-"));
    try {
      mkdirSync(join(root, "real/dir"), { recursive: true });
      symlinkSync("/real", join(root, "abs"));
      symlinkSync("../../..", join(root, "real/dir/up"));
      symlinkSync("real/dir", join(root, "rel"));
      expect(resolveInRoot(root, "/abs/dir/x")).toBe("/real/dir/x");
      expect(resolveInRoot(root, "/rel/up/etc/hosts")).toBe("/etc/hosts");
      expect(resolveInRoot(root, "/missing/../real/./new/a")).toBe("/real/new/a");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("projects every key, or only the items, with their modes", () => {
    const data = { b: Buffer.from("2"), a: Buffer.from("1") };
    expect(projectKeys("secret s", data, undefined, 0o440, false).map((f) => [f.path, f.mode])).toEqual([
      ["a", 0o440],
      ["b", 0o440],
    ]);
    expect(projectKeys("secret s", data, [{ key: "a", path: "sub/a.txt", mode: 0o400 }], 0o644, false)).toEqual([
      { path: "sub/a.txt", content: Buffer.from("1"), mode: 0o400 },
    ]);
    expect(() => projectKeys("secret s", data, [{ key: "c", path: "c" }], 0o644, false)).toThrow(PodWaiting);
    expect(projectKeys("secret s", data, [{ key: "c", path: "c" }], 0o644, true)).toEqual([]);
    expect(() => projectKeys("secret s", data, [{ key: "a", path: "../a" }], 0o644, false)).toThrow(/must be relative/);
  });

  it("builds a container's environment: envFrom, then env in order, then the service variables", () => {
    const pod: k8s.V1Pod = { metadata: { name: "p", namespace: "ns", labels: { app: "x" } }, spec: { containers: [] } };
    const container: k8s.V1Container = {
      name: "main",
      envFrom: [{ secretRef: { name: "s" }, prefix: "S_" }, { configMapRef: { name: "absent", optional: true } }],
      env: [
        { name: "POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "APP", valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: "GREETING", value: "$(POD) in $(KUBERNETES_SERVICE_HOST) $$(POD)" },
        { name: "KEY", valueFrom: { secretKeyRef: { name: "s", key: "k" } } },
      ],
    };
    const sources = { secrets: new Map([["s", { k: "v" }]]), configMaps: new Map([["absent", null]]) };
    expect(containerEnvironment(pod, container, sources, [["KUBERNETES_SERVICE_HOST", "127.0.0.1"]])).toEqual([
      ["S_k", "v"],
      ["POD", "p"],
      ["APP", "x"],
      ["GREETING", "p in 127.0.0.1 $(POD)"],
      ["KEY", "v"],
      ["KUBERNETES_SERVICE_HOST", "127.0.0.1"],
    ]);
    const missing = { ...container, envFrom: [], env: [{ name: "X", valueFrom: { secretKeyRef: { name: "gone", key: "k" } } }] };
    expect(() => containerEnvironment(pod, missing, { secrets: new Map([["gone", null]]), configMaps: new Map() }, [])).toThrow(
      /secret "gone" not found/,
    );
  });

  it("pulls only from loopback registries", () => {
    expect(isLoopbackReference("127.0.0.1:5000/captf/m:v1")).toBe(true);
    expect(isLoopbackReference("localhost:5000/m@sha256:00")).toBe(true);
    expect(isLoopbackReference("ghcr.io/captf/captf-controller:latest")).toBe(false);
    expect(isLoopbackReference("busybox")).toBe(false);
  });

  it("quotes everything it puts into the launch script", () => {
    const bin = Object.fromEntries(
      ["sh", "env", "unshare", "mount", "mkdir", "mknod", "touch", "cp", "hostname"].map((name) => [name, `/bin/${name}`]),
    ) as unknown as HostPrograms;
    const script = launchScript(
      {
        root: { dir: "/r" },
        devices: "/k/devices",
        mounts: [{ source: "/v/it's", target: "/data", readOnly: true, file: false }],
        readOnlyRoot: true,
        hostname: "p",
        workingDir: "/w",
        workingDirInRoot: "/w",
        env: [["A", "x'; rm -rf / #"]],
        argv: ["/bin/echo", "$(HOME) `id`"],
      },
      bin,
    );
    // A read-only bind in one command (mount(8) remounts it itself), /dev from the kubelet's template in one copy.
    expect(script).toContain(`/bin/mount --bind -o ro '/v/it'\\''s' "$R"'/data'`);
    expect(script).toContain(`/bin/cp -a '/k/devices/.' "$R/dev/"`);
    expect(script).not.toContain("mknod");
    expect(script).toContain(`exec /bin/env -i 'A=x'\\''; rm -rf / #' /bin/unshare --root="$R" --wd='/w' -- '/bin/echo' '$(HOME) \`id\`'`);
    expect(script.indexOf(`remount,bind,ro "$R" ||`)).toBeGreaterThan(script.indexOf("--bind -o ro '/v/it"));
  });

  it("runs a container as runAsUser/runAsGroup, else the Pod's, else the image's numeric User, refusing root under runAsNonRoot", () => {
    const main = (securityContext?: k8s.V1SecurityContext): k8s.V1Container => ({ name: "main", securityContext });
    const pod = (securityContext?: k8s.V1PodSecurityContext): k8s.V1PodSpec => ({ containers: [], securityContext });
    expect(containerUser(pod(), main(), "")).toEqual({ uid: 0, gid: 0, groups: [], noNewPrivs: false, dropCapabilities: [] });
    expect(containerUser(pod(), main(), "65532:65532")).toMatchObject({ uid: 65532, gid: 65532 });
    expect(containerUser(pod({ runAsUser: 1000 }), main(), "65532:65532")).toMatchObject({ uid: 1000, gid: 0 });
    expect(containerUser(pod({ runAsUser: 1000, runAsGroup: 10 }), main({ runAsUser: 7 }), "")).toMatchObject({ uid: 7, gid: 10 });
    expect(containerUser(pod(), main(), "nobody")).toMatchObject({ uid: 0, gid: 0 });
    expect(
      containerUser(
        pod({ fsGroup: 2000, supplementalGroups: [2000, 5] }),
        main({ allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } }),
        "1:1",
      ),
    ).toEqual({
      uid: 1,
      gid: 1,
      groups: [2000, 5],
      noNewPrivs: true,
      dropCapabilities: ["all"],
    });
    const refused = (spec: k8s.V1PodSpec, container: k8s.V1Container, user: string) => {
      try {
        containerUser(spec, container, user);
        return "allowed";
      } catch (error) {
        return error instanceof PodWaiting ? `${error.reason}: ${error.message}` : String(error);
      }
    };
    expect(refused(pod({ runAsNonRoot: true }), main(), "")).toBe(
      "CreateContainerConfigError: container has runAsNonRoot and image will run as root (container: main)",
    );
    expect(refused(pod(), main({ runAsNonRoot: true }), "nonroot")).toBe(
      "CreateContainerConfigError: container has runAsNonRoot and image has non-numeric user (nonroot), cannot verify user is " +
        "non-root (container: main)",
    );
    expect(refused(pod({ runAsNonRoot: true }), main({ runAsUser: 0 }), "65532")).toBe(
      "CreateContainerConfigError: container's runAsUser breaks non-root policy (container: main)",
    );
    expect(refused(pod({ runAsNonRoot: true }), main(), "65532:65532")).toBe("allowed");
  });

  it("drops to the container's user with setpriv around the chroot, which keeps only what the chroot and setuid need", () => {
    const user = { uid: 65532, gid: 65532, groups: [2000], noNewPrivs: true, dropCapabilities: ["all"] };
    expect(setprivArgs("/bin/setpriv", user)).toEqual([
      "/bin/setpriv",
      "--regid=65532",
      "--groups=2000",
      "--no-new-privs",
      "--bounding-set=-all,+sys_chroot,+setuid",
    ]);
    expect(setprivArgs("/bin/setpriv", { ...user, groups: [], noNewPrivs: false, dropCapabilities: [] })).toEqual([
      "/bin/setpriv",
      "--regid=65532",
      "--clear-groups",
    ]);
    const bin = Object.fromEntries(
      ["sh", "env", "unshare", "mount", "mkdir", "mknod", "touch", "cp", "hostname", "setpriv"].map((name) => [name, `/bin/${name}`]),
    ) as unknown as HostPrograms;
    const script = launchScript(
      {
        root: { dir: "/r" },
        devices: "/k/devices",
        mounts: [],
        readOnlyRoot: false,
        hostname: "p",
        workingDir: "/",
        workingDirInRoot: "/",
        env: [],
        argv: ["/x"],
        user,
      },
      bin,
    );
    expect(script).toContain(
      `exec /bin/env -i  /bin/setpriv --regid=65532 --groups=2000 --no-new-privs --bounding-set=-all,+sys_chroot,+setuid -- ` +
        `/bin/unshare --root="$R" --wd='/' --setuid=65532 -- '/x'`,
    );
  });

  it("keeps the last 80 lines, at most 2048 bytes, of a log", () => {
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
    expect(logTail(`${lines}\n`).split("\n")).toHaveLength(80);
    expect(Buffer.byteLength(logTail("x".repeat(5000)))).toBeLessThanOrEqual(2048);
  });
});

// The kubelet on the shared plane: a loopback registry serves a module image (a static tofu at
// /captf/runtime, a small module), the manager image's root is prepared in-process (this node
// and the runner bundle), and Jobs and Pods in one namespace run to their end.
describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "umoci", "skopeo", "docker-registry"],
  "the chroot kubelet",
  () => {
    const suffix = Date.now().toString(36);
    const namespace = `kubelet-${suffix}`;
    const work = mkdtempSync(join(tmpdir(), "captf-kubelet-test-"));
    const runnerImage = "captf.invalid/captf-controller:kubelet-test";
    // The runner image's root plus id, chroot and a root-only file, for running as a user.
    const userImage = "captf.invalid/user-test:kubelet-test";
    const kubeletLog: string[] = [];
    // Bound where a container's NODE_V8_COVERAGE points; world-writable, as the test command's pods/ directory.
    const coverageDir = join(work, "coverage");
    mkdirSync(coverageDir, { mode: 0o1777 });
    chmodSync(coverageDir, 0o1777);
    let moduleImage = "";
    let registry: LocalRegistry | undefined;
    let kubelet: ChrootKubelet | undefined;
    let core: k8s.CoreV1Api;
    let batch: k8s.BatchV1Api;
    let rbac: k8s.RbacAuthorizationV1Api;
    let kubeletImageResolver: ImageResolver = () => undefined;

    /** Polls until check returns a value; on timeout, fails with the kubelet's recent log. */
    async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMillis = 60_000): Promise<T> {
      const deadline = Date.now() + timeoutMillis;
      for (;;) {
        const value = await check();
        if (value !== undefined) return value;
        if (Date.now() > deadline)
          throw new Error(`${what}: not within ${timeoutMillis / 1000}s; the kubelet's log ends:\n${kubeletLog.slice(-25).join("\n")}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }

    const jobCondition = (job: k8s.V1Job, type: string) => job.status?.conditions?.find((c) => c.type === type && c.status === "True");

    async function finishedJob(name: string): Promise<{ job: k8s.V1Job; pod: k8s.V1Pod }> {
      const job = await waitFor(
        `Job ${name} finishes`,
        async () => {
          const current = await batch.readNamespacedJob({ name, namespace });
          return jobCondition(current, "Complete") || jobCondition(current, "Failed") ? current : undefined;
        },
        150_000,
      );
      const pods = await core.listNamespacedPod({ namespace, labelSelector: `job-name=${name}` });
      expect(pods.items).toHaveLength(1);
      return { job, pod: pods.items[0]! };
    }

    async function podGone(name: string, timeoutMillis = 60_000): Promise<void> {
      await waitFor(
        `Pod ${name} is deleted`,
        async () =>
          await core.readNamespacedPod({ name, namespace }).then(
            () => undefined,
            (error: unknown) => (error instanceof k8s.ApiException && error.code === 404 ? true : undefined),
          ),
        timeoutMillis,
      );
    }

    const terminated = (pod: k8s.V1Pod, container: string) =>
      [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((s) => s.name === container)?.state
        ?.terminated;

    beforeAll(async () => {
      const plane = sharedControlPlane();
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      core = kc.makeApiClient(k8s.CoreV1Api);
      batch = kc.makeApiClient(k8s.BatchV1Api);
      rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
      await core.createNamespace({ body: { metadata: { name: namespace } } });

      // The module image: a module whose only resource is built into tofu, so nothing is downloaded.
      const moduleDir = join(work, "module");
      mkdirSync(moduleDir);
      writeFileSync(
        join(moduleDir, "main.tf"),
        [
          'variable "name" {\n  type = string\n}',
          'resource "terraform_data" "this" {\n  input = var.name\n}',
          'output "name" {\n  value = terraform_data.this.output\n}',
          "",
        ].join("\n\n"),
      );
      const layout = join(work, "layout");
      buildModuleImage(layout, "v1", { moduleDir, runtime: requireTool("tofu"), runtimeVersion: "1.12.6", role: "machine" });
      registry = await startLocalRegistry();
      moduleImage = `${registry.host}/captf/kubelet-module:v1`;
      pushImage(layout, "v1", moduleImage);

      // The manager image: node on PATH and the runner bundle at /opt/captf/runner.
      const bundle = join(work, "bundle");
      execFileSync(process.execPath, [fileURLToPath(new URL("../../runner/scripts/build-bundle.mjs", import.meta.url)), "--out", bundle], {
        stdio: "pipe",
      });
      const runnerRoot = prepareRunnerImageRoot(join(work, "runner-image"), bundle);
      const userRoot = prepareRunnerImageRoot(join(work, "user-image"), bundle);
      for (const program of ["id", "chroot"]) placeHostProgram(userRoot.rootfs, program);
      writeFileSync(join(userRoot.rootfs, "root-only"), "secret", { mode: 0o600 });
      kubeletImageResolver = (reference) => (reference === runnerImage ? runnerRoot : reference === userImage ? userRoot : undefined);

      kubelet = await startChrootKubelet({
        kubeconfigPath: plane.kubeconfigPath,
        nodeName: `chroot-${suffix}`,
        namespaces: [namespace],
        imageResolver: kubeletImageResolver,
        log: (line) => kubeletLog.push(`${new Date().toISOString()} ${line}`),
        coverageDirectory: coverageDir,
      });
    }, 180_000);

    afterAll(async () => {
      await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
      await kubelet?.stop();
      await registry?.stop();
      rmSync(work, { recursive: true, force: true });
    }, 60_000);

    it("registers a Ready node", async () => {
      const node = await core.readNode({ name: kubelet!.nodeName });
      expect(node.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
      expect(node.metadata?.labels?.["kubernetes.io/hostname"]).toBe(kubelet!.nodeName);
    });

    it("runs a Job whose image it pulls from the loopback registry", async () => {
      await batch.createNamespacedJob({
        namespace,
        body: {
          metadata: { name: "tofu-version" },
          spec: {
            backoffLimit: 0,
            template: {
              spec: { restartPolicy: "Never", containers: [{ name: "main", image: moduleImage, command: ["/captf/runtime", "version"] }] },
            },
          },
        },
      });
      const { job, pod } = await finishedJob("tofu-version");
      expect(jobCondition(job, "Complete")).toBeDefined();
      expect(pod.spec?.nodeName).toBe(kubelet!.nodeName);
      expect(pod.status?.phase).toBe("Succeeded");
      const state = terminated(pod, "main");
      expect(state).toMatchObject({ exitCode: 0, reason: "Completed" });
      expect(state?.startedAt).toBeDefined();
      expect(state?.finishedAt).toBeDefined();
      expect(pod.status?.containerStatuses?.[0]?.imageID).toMatch(
        new RegExp(`^${registry!.host}/captf/kubelet-module@sha256:[0-9a-f]{64}$`),
      );
      expect(kubelet!.containerLog(namespace, pod.metadata!.name!, "main")).toMatch(/^OpenTofu v\d+\.\d+\.\d+/);
    }, 180_000);

    it("unpacks an image once: a Job naming it by digest after one that named it by tag reuses its root", async () => {
      const job = (name: string, image: string) =>
        batch.createNamespacedJob({
          namespace,
          body: {
            metadata: { name },
            spec: {
              backoffLimit: 0,
              template: { spec: { restartPolicy: "Never", containers: [{ name: "main", image, command: ["/captf/runtime", "version"] }] } },
            },
          },
        });
      await job("by-tag", moduleImage);
      const byTag = (await finishedJob("by-tag")).pod;
      const digestReference = byTag.status!.containerStatuses![0]!.imageID!;
      expect(digestReference).toMatch(/@sha256:[0-9a-f]{64}$/);
      await job("by-digest", digestReference);
      const { pod } = await finishedJob("by-digest");
      expect(pod.status?.phase).toBe("Succeeded");
      expect(pod.status?.containerStatuses?.[0]?.imageID).toBe(digestReference);
      const module = `${registry!.host}/captf/kubelet-module`;
      expect(
        kubeletLog
          .filter((line) => line.includes(` pulled ${module}`))
          .map((line) =>
            line
              .replace(/ \(.*$/, "")
              .split(" ")
              .at(-1),
          ),
      ).toEqual([moduleImage]);
      expect(kubeletLog.some((line) => line.includes(`${digestReference}: unpacked already, not pulled again`))).toBe(true);
    }, 180_000);

    it("gives containers the Pod's volumes, environment, token, hostname and a read-only root", async () => {
      await core.createNamespacedSecret({ namespace, body: { metadata: { name: "env-secret" }, stringData: { a: "1", b: "2" } } });
      const script = `
      const fs = require("fs"), os = require("os"), https = require("https");
      const e = process.env, sa = "/var/run/secrets/kubernetes.io/serviceaccount";
      const file = (path) => ({ mode: (fs.statSync(path).mode & 0o777).toString(8), text: fs.readFileSync(path, "utf8") });
      let rootWrite = "ok";
      try { fs.writeFileSync("/probe", "x"); } catch (error) { rootWrite = error.code; }
      let readOnlyVolumeWrite = "ok";
      try { fs.writeFileSync("/etc/conf/new", "x"); } catch (error) { readOnlyVolumeWrite = error.code; }
      const finish = (status, body) => fs.writeFileSync("/dev/termination-log", JSON.stringify({
        env: { POD_NAME: e.POD_NAME, NS: e.NS, GREETING: e.GREETING, FROM_SECRET: e.FROM_SECRET, S_a: e.S_a, S_b: e.S_b,
          HOSTNAME: e.HOSTNAME, PATH: e.PATH },
        argv: process.argv.slice(1), cwd: process.cwd(), hostname: os.hostname(), pid: process.pid, rootWrite, readOnlyVolumeWrite,
        fromInit: fs.readFileSync("/shared/from-init", "utf8"),
        files: { a: file("/etc/conf/sub/a.txt"), b: file("/etc/conf/b.txt"), name: file("/etc/podinfo/name") },
        saNamespace: fs.readFileSync(sa + "/namespace", "utf8"),
        api: { status, asServiceAccount: body.includes("system:serviceaccount:" + e.NS + ":default") },
      }));
      https.get({ host: e.KUBERNETES_SERVICE_HOST, port: e.KUBERNETES_SERVICE_PORT,
        path: "/api/v1/namespaces/" + e.NS + "/pods/" + e.POD_NAME,
        ca: fs.readFileSync(sa + "/ca.crt"), headers: { Authorization: "Bearer " + fs.readFileSync(sa + "/token", "utf8") } }, (res) => {
        let body = ""; res.on("data", (chunk) => (body += chunk)); res.on("end", () => finish(res.statusCode, body));
      }).on("error", (error) => finish(0, error.message));`;
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "environment", labels: { app: "kubelet-test" } },
          spec: {
            restartPolicy: "Never",
            initContainers: [
              {
                name: "init",
                image: runnerImage,
                command: ["node", "-e", `require("fs").writeFileSync("/shared/from-init", "hello from init")`],
                volumeMounts: [{ name: "shared", mountPath: "/shared" }],
              },
            ],
            containers: [
              {
                name: "main",
                image: runnerImage,
                command: ["node", "-e", script, "$(NS)"],
                workingDir: "/shared",
                env: [
                  { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                  { name: "NS", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
                  { name: "GREETING", value: "hi $(POD_NAME) $$(POD_NAME) $(UNDEFINED)" },
                  { name: "FROM_SECRET", valueFrom: { secretKeyRef: { name: "env-secret", key: "b" } } },
                ],
                envFrom: [{ secretRef: { name: "env-secret" }, prefix: "S_" }],
                volumeMounts: [
                  { name: "shared", mountPath: "/shared" },
                  { name: "conf", mountPath: "/etc/conf", readOnly: true },
                  { name: "podinfo", mountPath: "/etc/podinfo" },
                ],
                securityContext: { readOnlyRootFilesystem: true },
              },
            ],
            volumes: [
              { name: "shared", emptyDir: {} },
              {
                name: "conf",
                secret: {
                  secretName: "env-secret",
                  defaultMode: 0o440,
                  items: [
                    { key: "a", path: "sub/a.txt", mode: 0o400 },
                    { key: "b", path: "b.txt" },
                  ],
                },
              },
              { name: "podinfo", downwardAPI: { items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }] } },
            ],
          },
        },
      });
      const pod = await waitFor("Pod environment ends", async () => {
        const current = await core.readNamespacedPod({ name: "environment", namespace });
        return current.status?.phase === "Succeeded" || current.status?.phase === "Failed" ? current : undefined;
      });
      expect({
        phase: pod.status?.phase,
        init: terminated(pod, "init")?.exitCode,
        log: kubelet!.containerLog(namespace, "environment", "main"),
      }).toEqual({ phase: "Succeeded", init: 0, log: "" });
      const report: unknown = JSON.parse(terminated(pod, "main")?.message ?? "{}");
      expect(report).toEqual({
        env: {
          POD_NAME: "environment",
          NS: namespace,
          GREETING: "hi environment $(POD_NAME) $(UNDEFINED)",
          FROM_SECRET: "2",
          S_a: "1",
          S_b: "2",
          HOSTNAME: "environment",
          PATH: "/usr/local/bin:/usr/bin:/bin",
        },
        argv: [namespace],
        cwd: "/shared",
        hostname: "environment",
        pid: 1,
        rootWrite: "EROFS",
        readOnlyVolumeWrite: "EROFS",
        fromInit: "hello from init",
        files: { a: { mode: "400", text: "1" }, b: { mode: "440", text: "2" }, name: { mode: "644", text: "environment" } },
        saNamespace: namespace,
        api: { status: 403, asServiceAccount: true },
      });
    }, 120_000);

    it("runs a captf Job end to end: the runner's init container, the module image, state in the cluster", async () => {
      const owner = { name: "m-0", uid: "00000000-0000-4000-8000-000000000001", kind: "TerraformMachine" };
      const jobName = `captf-m-${owner.name}-apply-a1-kubelet`;
      const stateSuffix = `kubelet-${suffix}-m`;
      // The ServiceAccount the Job runs as, allowed what the kubernetes backend and the runner's events need.
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "captf-runner" } } });
      await rbac.createNamespacedRole({
        namespace,
        body: {
          metadata: { name: "captf-runner" },
          rules: [
            { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] },
            {
              apiGroups: ["coordination.k8s.io"],
              resources: ["leases"],
              verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
            },
            { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
          ],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: "captf-runner" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "captf-runner" },
          subjects: [{ kind: "ServiceAccount", name: "captf-runner", namespace }],
        },
      });
      // The per-run Secret: the generated root, shaped like @captf/render's (a module "role" at ../../module).
      const main = {
        terraform: { backend: { kubernetes: {} } },
        variable: { name: { type: "string" } },
        module: { role: { name: "${var.name}", source: "../../module" } },
        output: { name: { value: "${module.role.name}", sensitive: true } },
      };
      await core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: `captf-run-${jobName}` },
          stringData: {
            "main.tf.json": `${JSON.stringify(main, null, 2)}\n`,
            "terraform.tfvars.json": `${JSON.stringify({ name: owner.name })}\n`,
          },
        },
      });
      const stateLabels = { [labels.managed]: "true", [labels.clusterName]: "demo" };
      const labelMap = Object.entries(stateLabels)
        .map(([key, value]) => `${JSON.stringify(key)}=${JSON.stringify(value)}`)
        .join(",");
      const restricted = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, readOnlyRootFilesystem: true };
      // The Job as @captf/controller's buildJob makes it (testkit cannot import the controller).
      await batch.createNamespacedJob({
        namespace,
        body: {
          metadata: { name: jobName, labels: { [labels.managed]: "true" } },
          spec: {
            backoffLimit: 0,
            activeDeadlineSeconds: 3600,
            template: {
              metadata: { labels: { [labels.managed]: "true" } },
              spec: {
                restartPolicy: "Never",
                terminationGracePeriodSeconds: 600,
                serviceAccountName: "captf-runner",
                securityContext: { runAsNonRoot: true, fsGroup: 65532, seccompProfile: { type: "RuntimeDefault" } },
                initContainers: [
                  {
                    name: "runner",
                    image: runnerImage,
                    command: ["node", "/opt/captf/runner/runner.mjs", "copy", "/captf/bin"],
                    volumeMounts: [{ name: "runner", mountPath: "/captf/bin" }],
                    securityContext: { ...restricted, runAsNonRoot: true, runAsUser: 65532 },
                  },
                ],
                containers: [
                  {
                    name: "source",
                    image: moduleImage,
                    imagePullPolicy: "IfNotPresent",
                    command: ["/captf/bin/node", "/captf/bin/runner.cjs", "run"],
                    args: [
                      "--op=apply",
                      "--bin=/captf/runtime",
                      `--image=${moduleImage}`,
                      "--module=/captf/module",
                      "--providers=/captf/providers",
                      "--workdir=/captf/work",
                      "--config=/captf/config",
                      "--lock-timeout=300s",
                      "--stop-timeout=570s",
                      "--result=/dev/termination-log",
                      `--backend-config=secret_suffix=${stateSuffix}`,
                      `--backend-config=namespace=${namespace}`,
                      "--backend-config=in_cluster_config=true",
                      `--backend-config=labels={${labelMap}}`,
                      `--event-object=${groupVersion}/${owner.kind}/${namespace}/${owner.name}/${owner.uid}`,
                      `--job-name=${jobName}`,
                    ],
                    env: [
                      { name: "TF_IN_AUTOMATION", value: "1" },
                      { name: "TF_INPUT", value: "0" },
                      { name: "HOME", value: "/captf/work" },
                      { name: "TMPDIR", value: "/tmp" },
                      { name: "KUBE_NAMESPACE", value: namespace },
                      { name: "CHECKPOINT_DISABLE", value: "1" },
                      { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                    ],
                    volumeMounts: [
                      { name: "runner", mountPath: "/captf/bin", readOnly: true },
                      { name: "work", mountPath: "/captf/work" },
                      { name: "tmp", mountPath: "/tmp" },
                      { name: "config", mountPath: "/captf/config", readOnly: true },
                    ],
                    terminationMessagePath: "/dev/termination-log",
                    terminationMessagePolicy: "File",
                    securityContext: restricted,
                  },
                ],
                volumes: [
                  { name: "runner", emptyDir: {} },
                  { name: "work", emptyDir: {} },
                  { name: "tmp", emptyDir: {} },
                  { name: "config", secret: { secretName: `captf-run-${jobName}`, defaultMode: 0o440 } },
                ],
              },
            },
          },
        },
      });
      const { job, pod } = await finishedJob(jobName);
      const message = terminated(pod, "source")?.message;
      const reading = parseRunResult(message);
      if (!reading.ok || !jobCondition(job, "Complete")) {
        const log = kubelet!.containerLog(namespace, pod.metadata!.name!, "source").slice(-3000);
        throw new Error(`the Job did not complete: ${JSON.stringify({ reading, init: terminated(pod, "runner"), log })}`);
      }
      expect(terminated(pod, "runner")).toMatchObject({ exitCode: 0, reason: "Completed" });
      expect(kubelet!.containerLog(namespace, pod.metadata!.name!, "runner")).toMatch(
        /^copied the runner bundle from \/opt\/captf\/runner to \/captf\/bin/,
      );
      expect(terminated(pod, "source")).toMatchObject({ exitCode: 0, reason: "Completed" });
      const result = reading.result;
      expect({ op: result.op, error: result.error }).toEqual({ op: "apply", error: null });
      expect("steps" in result ? result.steps.map((step) => step.name) : []).toEqual(["init", "validate", "apply"]);
      const state = await core.readNamespacedSecret({ name: `tfstate-default-${stateSuffix}`, namespace });
      expect(state.metadata?.labels).toMatchObject(stateLabels);
      expect(state.data?.tfstate).toBeDefined();
    }, 240_000);

    it("accounts each container run's CPU in a cgroup of its own, the processes it started and waited for included", async () => {
      // The container's node spends 0.3 s of CPU in a child it waits for, then exits: CPU time, not wall time, so load does not matter.
      const burn = "const t = process.cpuUsage(); while ((u => u.user + u.system)(process.cpuUsage(t)) < 300000);";
      const script = `require("child_process").execFileSync(process.execPath, ["-e", ${JSON.stringify(burn)}])`;
      await batch.createNamespacedJob({
        namespace,
        body: {
          metadata: { name: "cpu-accounted" },
          spec: {
            backoffLimit: 0,
            template: {
              spec: { restartPolicy: "Never", containers: [{ name: "main", image: runnerImage, command: ["node", "-e", script] }] },
            },
          },
        },
      });
      const { pod } = await finishedJob("cpu-accounted");
      expect(pod.status?.phase).toBe("Succeeded");
      const runs = kubelet!.containerCpu().filter((run) => run.pod === pod.metadata!.name);
      expect(runs).toEqual([
        { namespace, pod: pod.metadata!.name, container: "main", restart: 0, seconds: expect.any(Number), running: false },
      ]);
      expect(runs[0]!.seconds).toBeGreaterThanOrEqual(0.3);
      // The run's cgroup is gone with it.
      const root = cpuHierarchy()!.root;
      const cgroups = readdirSync(root).filter((name) => name.startsWith(`captf-kubelet-${kubelet!.nodeName}-`));
      expect(cgroups).toHaveLength(1);
      expect(readdirSync(join(root, cgroups[0]!)).filter((name) => name.startsWith(pod.metadata!.uid!))).toEqual([]);
    }, 120_000);

    it("gives every container its own /dev as a runtime does: the usual nodes, shm, the fd links", async () => {
      const script = `
        const fs = require("fs");
        const dev = (name) => { const s = fs.lstatSync("/dev/" + name); return [s.isCharacterDevice(), (s.mode & 0o7777).toString(8)]; };
        fs.writeFileSync("/dev/null", "gone");
        fs.writeFileSync("/dev/shm/mine", "x");
        const zero = Buffer.alloc(4, 1);
        fs.readSync(fs.openSync("/dev/zero", "r"), zero);
        fs.writeFileSync("/dev/termination-log", JSON.stringify({
          nodes: ["null", "zero", "random", "urandom", "tty"].map(dev),
          zero: [...zero],
          shm: (fs.statSync("/dev/shm").mode & 0o7777).toString(8),
          fd: fs.readlinkSync("/dev/fd"),
          stdout: fs.readlinkSync("/dev/stdout"),
        }));`;
      await batch.createNamespacedJob({
        namespace,
        body: {
          metadata: { name: "devices" },
          spec: {
            backoffLimit: 0,
            template: {
              spec: { restartPolicy: "Never", containers: [{ name: "main", image: runnerImage, command: ["node", "-e", script] }] },
            },
          },
        },
      });
      const { pod } = await finishedJob("devices");
      expect(JSON.parse(terminated(pod, "main")?.message ?? "{}")).toEqual({
        nodes: Array.from({ length: 5 }, () => [true, "666"]),
        zero: [0, 0, 0, 0],
        shm: "1777",
        fd: "/proc/self/fd",
        stdout: "/proc/self/fd/1",
      });
    }, 120_000);

    it("fails a Pod whose container exits non-zero, and its Job (backoffLimit 0)", async () => {
      await batch.createNamespacedJob({
        namespace,
        body: {
          metadata: { name: "fails" },
          spec: {
            backoffLimit: 0,
            template: {
              spec: {
                restartPolicy: "Never",
                containers: [
                  {
                    name: "main",
                    image: runnerImage,
                    command: ["node", "-e", `require("fs").writeFileSync("/dev/termination-log", "it broke"); process.exit(3)`],
                  },
                ],
              },
            },
          },
        },
      });
      const { job, pod } = await finishedJob("fails");
      expect(jobCondition(job, "Failed")?.reason).toBe("BackoffLimitExceeded");
      expect(pod.status?.phase).toBe("Failed");
      expect(terminated(pod, "main")).toMatchObject({ exitCode: 3, reason: "Error", message: "it broke" });
    }, 120_000);

    it("restarts a failed container in place under restartPolicy OnFailure, its log as the message", async () => {
      const out = join(work, "restart-out");
      const script =
        `const fs = require("fs"); if (!fs.existsSync("/out/tried")) { fs.writeFileSync("/out/tried", "1"); ` +
        `console.error("first try fails"); process.exit(1); }`;
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "restarts" },
          spec: {
            restartPolicy: "OnFailure",
            containers: [
              {
                name: "main",
                image: runnerImage,
                command: ["node", "-e", script],
                terminationMessagePolicy: "FallbackToLogsOnError",
                volumeMounts: [{ name: "out", mountPath: "/out" }],
              },
            ],
            volumes: [{ name: "out", hostPath: { path: out, type: "DirectoryOrCreate" } }],
          },
        },
      });
      const pod = await waitFor("the restarting Pod succeeds", async () => {
        const current = await core.readNamespacedPod({ name: "restarts", namespace });
        return current.status?.phase === "Succeeded" || current.status?.phase === "Failed" ? current : undefined;
      });
      const status = pod.status?.containerStatuses?.[0];
      expect({ phase: pod.status?.phase, restarts: status?.restartCount, exit: status?.state?.terminated?.exitCode }).toEqual({
        phase: "Succeeded",
        restarts: 1,
        exit: 0,
      });
      expect(status?.lastState?.terminated).toMatchObject({ exitCode: 1, reason: "Error", message: "first try fails" });
    }, 120_000);

    it("stops a Pod deleted while it runs: SIGTERM, SIGKILL after the grace period, then deletes it", async () => {
      const out = join(work, "stop-out");
      const marker = `stubborn-${suffix}`;
      const script =
        `const fs = require("fs"); process.on("SIGTERM", () => fs.writeFileSync("/out/term", "SIGTERM")); ` +
        `fs.writeFileSync("/out/started", "yes"); setInterval(() => {}, 1000);`;
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "stubborn" },
          spec: {
            restartPolicy: "Never",
            terminationGracePeriodSeconds: 2,
            containers: [
              {
                name: "main",
                image: runnerImage,
                command: ["node", "-e", script, marker],
                volumeMounts: [{ name: "out", mountPath: "/out" }],
              },
            ],
            volumes: [{ name: "out", hostPath: { path: out, type: "DirectoryOrCreate" } }],
          },
        },
      });
      await waitFor("the stubborn container starts", async () => (existsSync(join(out, "started")) ? true : undefined));
      const withMarker = () =>
        readdirSync("/proc")
          .filter((entry) => /^\d+$/.test(entry))
          .filter((pid) => {
            try {
              return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker);
            } catch {
              return false;
            }
          });
      expect(withMarker().length).toBeGreaterThan(0);
      await core.deleteNamespacedPod({ name: "stubborn", namespace });
      await podGone("stubborn");
      expect(readFileSync(join(out, "term"), "utf8")).toBe("SIGTERM");
      expect(withMarker()).toEqual([]);
    }, 120_000);

    it("binds its coverage directory where a container's NODE_V8_COVERAGE points: node, as its user, writes there on SIGTERM", async () => {
      // As the manager in the e2e under the test command: uid 65532, a read-only root, exits on SIGTERM.
      const script = `process.on("SIGTERM", () => process.exit(0)); console.log("handling SIGTERM"); setInterval(() => {}, 1000);`;
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "covered" },
          spec: {
            restartPolicy: "Always",
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
            containers: [
              {
                name: "main",
                image: runnerImage,
                command: ["node", "-e", script],
                env: [{ name: "NODE_V8_COVERAGE", value: "/captf-coverage" }],
                securityContext: { readOnlyRootFilesystem: true },
              },
            ],
          },
        },
      });
      await waitFor("the covered container handles SIGTERM", async () =>
        kubelet!.containerLog(namespace, "covered", "main").includes("handling SIGTERM") ? true : undefined,
      );
      expect(readdirSync(coverageDir)).toEqual([]);
      await core.deleteNamespacedPod({ name: "covered", namespace });
      await podGone("covered");
      const written = readdirSync(coverageDir);
      expect(written).toEqual([expect.stringMatching(/^coverage-\d+-\d+-\d+\.json$/)]);
      expect(statSync(join(coverageDir, written[0]!)).uid).toBe(65532);
      const report = JSON.parse(readFileSync(join(coverageDir, written[0]!), "utf8")) as { result: { url: string }[] };
      expect(report.result.length).toBeGreaterThan(0);
    }, 120_000);

    it("fails a Pod that outlives its activeDeadlineSeconds", async () => {
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "deadline" },
          spec: {
            restartPolicy: "Never",
            activeDeadlineSeconds: 2,
            terminationGracePeriodSeconds: 1,
            containers: [{ name: "main", image: runnerImage, command: ["node", "-e", "setInterval(() => {}, 1000)"] }],
          },
        },
      });
      const pod = await waitFor("the deadline Pod fails", async () => {
        const current = await core.readNamespacedPod({ name: "deadline", namespace });
        return current.status?.phase === "Failed" ? current : undefined;
      });
      expect({ reason: pod.status?.reason, main: terminated(pod, "main")?.exitCode }).toEqual({ reason: "DeadlineExceeded", main: 137 });
    }, 120_000);

    /** Waits for a Pod of the namespace to reach Succeeded or Failed. */
    async function endedPod(name: string, timeoutMillis = 60_000): Promise<k8s.V1Pod> {
      return waitFor(
        `Pod ${name} ends`,
        async () => {
          const current = await core.readNamespacedPod({ name, namespace });
          return current.status?.phase === "Succeeded" || current.status?.phase === "Failed" ? current : undefined;
        },
        timeoutMillis,
      );
    }

    const initStatus = (pod: k8s.V1Pod, container: string) => pod.status?.initContainerStatuses?.find((s) => s.name === container);
    const podCondition = (pod: k8s.V1Pod, type: string) => pod.status?.conditions?.find((c) => c.type === type)?.status;
    /** A node script that polls for a file, then exits 0 (1 after 30 s). */
    const awaitFile = (path: string) =>
      `const fs = require("fs"); const until = Date.now() + 30000; ` +
      `const poll = () => fs.existsSync(${JSON.stringify(path)}) ? process.exit(0) : ` +
      `Date.now() > until ? process.exit(1) : setTimeout(poll, 100); ` +
      `poll();`;

    it("runs native sidecars beside the main container, each started in its turn, and ends them in reverse order after it", async () => {
      const out = join(work, "sidecar-out");
      // "first" becomes ready late (its startup probe holds back the init container after it); on
      // SIGTERM it reports whether "second" had already exited. "second" exits 1 on SIGTERM. (A
      // signal that comes before node's handler is ignored: a namespace's PID 1 has no default action.)
      const first = `const fs = require("fs");
      setTimeout(() => fs.writeFileSync("/shared/ready", "yes"), 1500);
      process.on("SIGTERM", () => {
        fs.writeFileSync("/dev/termination-log", JSON.stringify({ signal: "SIGTERM", secondExited: fs.existsSync("/out/second-exited") }));
        process.exit(0);
      });
      setInterval(() => {}, 1000);`;
      const second = `const fs = require("fs");
      process.on("SIGTERM", () => {
        fs.writeFileSync("/dev/termination-log", "second ends");
        setTimeout(() => { fs.writeFileSync("/out/second-exited", "yes"); process.exit(1); }, 500);
      });
      fs.writeFileSync("/out/second-listens", "yes");
      setInterval(() => {}, 1000);`;
      const mounts = [
        { name: "shared", mountPath: "/shared" },
        { name: "out", mountPath: "/out" },
      ];
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "sidecars" },
          spec: {
            restartPolicy: "Never",
            terminationGracePeriodSeconds: 20,
            initContainers: [
              {
                name: "first",
                image: runnerImage,
                restartPolicy: "Always",
                command: ["node", "-e", first],
                startupProbe: {
                  exec: { command: ["node", "-e", `process.exit(require("fs").existsSync("/shared/ready") ? 0 : 1)`] },
                  periodSeconds: 1,
                  failureThreshold: 30,
                },
                volumeMounts: mounts,
              },
              {
                name: "after-first",
                image: runnerImage,
                command: ["node", "-e", `process.exit(require("fs").existsSync("/shared/ready") ? 0 : 7)`],
                volumeMounts: mounts,
              },
              { name: "second", image: runnerImage, restartPolicy: "Always", command: ["node", "-e", second], volumeMounts: mounts },
            ],
            containers: [{ name: "main", image: runnerImage, command: ["node", "-e", awaitFile("/out/go")], volumeMounts: mounts }],
            volumes: [
              { name: "shared", emptyDir: {} },
              { name: "out", hostPath: { path: out, type: "DirectoryOrCreate" } },
            ],
          },
        },
      });
      const running = await waitFor("the main container runs beside both sidecars", async () => {
        const current = await core.readNamespacedPod({ name: "sidecars", namespace });
        const sidecarsUp = ["first", "second"].every(
          (name) => initStatus(current, name)?.started && initStatus(current, name)?.state?.running,
        );
        const mainRuns = current.status?.containerStatuses?.[0]?.state?.running;
        return current.status?.phase === "Running" && sidecarsUp && mainRuns && existsSync(join(out, "second-listens"))
          ? current
          : undefined;
      });
      expect({
        initialized: podCondition(running, "Initialized"),
        ready: podCondition(running, "Ready"),
        afterFirst: initStatus(running, "after-first")?.state?.terminated?.exitCode,
      }).toEqual({
        initialized: "True",
        ready: "True",
        afterFirst: 0,
      });
      writeFileSync(join(out, "go"), "");
      const pod = await endedPod("sidecars");
      expect(pod.status?.phase).toBe("Succeeded");
      expect(terminated(pod, "main")).toMatchObject({ exitCode: 0, reason: "Completed" });
      expect(terminated(pod, "second")).toMatchObject({ exitCode: 1, reason: "Error", message: "second ends" });
      expect(JSON.parse(terminated(pod, "first")?.message ?? "{}")).toEqual({ signal: "SIGTERM", secondExited: true });
      expect(terminated(pod, "first")?.exitCode).toBe(0);
      expect(initStatus(pod, "first")).toMatchObject({ started: false, restartCount: 0 });
      const initialized = pod.status?.conditions?.find((c) => c.type === "Initialized");
      expect([initialized?.status, initialized?.reason]).toEqual(["True", undefined]);
    }, 120_000);

    it("restarts a sidecar that exits while the main container runs", async () => {
      const out = join(work, "sidecar-restart-out");
      const sidecar = `const fs = require("fs");
      if (!fs.existsSync("/out/crashed")) { fs.writeFileSync("/out/crashed", "yes"); setTimeout(() => process.exit(4), 300); }
      else { process.on("SIGTERM", () => process.exit(0)); fs.writeFileSync("/out/second-run", "yes"); setInterval(() => {}, 1000); }`;
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "sidecar-restarts" },
          spec: {
            restartPolicy: "Never",
            terminationGracePeriodSeconds: 5,
            initContainers: [
              {
                name: "helper",
                image: runnerImage,
                restartPolicy: "Always",
                command: ["node", "-e", sidecar],
                volumeMounts: [{ name: "out", mountPath: "/out" }],
              },
            ],
            containers: [
              {
                name: "main",
                image: runnerImage,
                command: ["node", "-e", awaitFile("/out/second-run")],
                volumeMounts: [{ name: "out", mountPath: "/out" }],
              },
            ],
            volumes: [{ name: "out", hostPath: { path: out, type: "DirectoryOrCreate" } }],
          },
        },
      });
      const pod = await endedPod("sidecar-restarts");
      const helper = initStatus(pod, "helper");
      expect({ phase: pod.status?.phase, main: terminated(pod, "main")?.exitCode, restarts: helper?.restartCount }).toEqual({
        phase: "Succeeded",
        main: 0,
        restarts: 1,
      });
      expect(helper?.lastState?.terminated).toMatchObject({ exitCode: 4, reason: "Error" });
      expect(helper?.state?.terminated).toMatchObject({ exitCode: 0, reason: "Completed" });
    }, 120_000);

    it("fails a Pod whose main container fails, and still ends its sidecar with its message", async () => {
      const sidecar =
        `const fs = require("fs"); process.on("SIGTERM", () => { fs.writeFileSync("/dev/termination-log", ` +
        `"sidecar done"); process.exit(0); }); fs.writeFileSync("/shared/listens", "yes"); setInterval(() => {}, 1000);`;
      const fail =
        `const fs = require("fs"); const poll = () => fs.existsSync("/shared/listens") ? process.exit(2) : ` +
        `setTimeout(poll, 100); poll();`;
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "sidecar-main-fails" },
          spec: {
            restartPolicy: "Never",
            initContainers: [
              {
                name: "helper",
                image: runnerImage,
                restartPolicy: "Always",
                command: ["node", "-e", sidecar],
                volumeMounts: [{ name: "shared", mountPath: "/shared" }],
              },
            ],
            containers: [
              { name: "main", image: runnerImage, command: ["node", "-e", fail], volumeMounts: [{ name: "shared", mountPath: "/shared" }] },
            ],
            volumes: [{ name: "shared", emptyDir: {} }],
          },
        },
      });
      const pod = await endedPod("sidecar-main-fails");
      expect({ phase: pod.status?.phase, main: terminated(pod, "main")?.exitCode }).toEqual({ phase: "Failed", main: 2 });
      expect(terminated(pod, "helper")).toMatchObject({ exitCode: 0, reason: "Completed", message: "sidecar done" });
    }, 120_000);

    it("runs a Job whose token only its sidecar mounts (automountServiceAccountToken: false): the main container has none", async () => {
      // root-ca-cert-publisher fills every namespace with kube-root-ca.crt, as on a real cluster.
      await waitFor(
        "kube-root-ca.crt is published",
        async () => (await core.readNamespacedConfigMap({ name: "kube-root-ca.crt", namespace }).catch(() => undefined))?.data?.["ca.crt"],
      );
      // A port free now (the test command runs other planes beside this one); a fixed one could be taken, and the sidecar
      // would crash-loop on it.
      const port = await freeLoopbackPort();
      const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
      // The broker: asks the API server who its token is (403: "default" may not list Pods), serves that to the main container on
      // 127.0.0.1, and on SIGTERM leaves a summary as its termination message.
      const brokerScript = `
      const fs = require("fs"), http = require("http"), https = require("https");
      const sa = ${JSON.stringify(sa)}, ns = fs.readFileSync(sa + "/namespace", "utf8");
      let served = 0, api;
      https.get({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT,
        path: "/api/v1/namespaces/" + ns + "/pods",
        ca: fs.readFileSync(sa + "/ca.crt"), headers: { Authorization: "Bearer " + fs.readFileSync(sa + "/token", "utf8") } }, (res) => {
        let body = ""; res.on("data", (chunk) => (body += chunk)); res.on("end", () => {
          api = { status: res.statusCode, asServiceAccount: body.includes("system:serviceaccount:" + ns + ":default") };
          http.createServer((req, answer) => { served++; answer.end(JSON.stringify(api)); }).listen(${port}, "127.0.0.1");
        });
      }).on("error", (error) => { api = { error: error.message }; });
      process.on("SIGTERM", () => {
        const tokenMode = (fs.statSync(sa + "/token").mode & 0o777).toString(8);
        fs.writeFileSync("/dev/termination-log", JSON.stringify({ served, api, tokenMode }));
        process.exit(0);
      });`;
      // The main container: no token directory, no JWT in any file or variable it can read.
      const mainScript = `
      const fs = require("fs"), http = require("http"), path = require("path");
      const jwt = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\./;
      const withTokens = [];
      const walk = (dir) => { for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (["/proc", "/sys", "/dev"].includes(file)) continue;
        if (entry.isDirectory()) walk(file);
        else if (entry.isFile()) {
          try { if (jwt.test(fs.readFileSync(file, "latin1"))) withTokens.push(file); }
          catch (error) { withTokens.push(file + ": " + error.code); }
        }
      } };
      walk("/");
      http.get({ host: "127.0.0.1", port: ${port}, path: "/" }, (res) => {
        let body = ""; res.on("data", (c) => (body += c)); res.on("end", () => {
        const envTokens = Object.keys(process.env).filter((k) => jwt.test(process.env[k]));
        const saDir = fs.existsSync(${JSON.stringify(sa)});
        fs.writeFileSync("/dev/termination-log", JSON.stringify({ saDir, withTokens, envTokens, broker: JSON.parse(body) }));
      }); });`;
      await batch.createNamespacedJob({
        namespace,
        body: {
          metadata: { name: "brokered" },
          spec: {
            backoffLimit: 0,
            template: {
              spec: {
                restartPolicy: "Never",
                automountServiceAccountToken: false,
                serviceAccountName: "default",
                initContainers: [
                  {
                    name: "broker",
                    image: runnerImage,
                    restartPolicy: "Always",
                    command: ["node", "-e", brokerScript],
                    startupProbe: { httpGet: { host: "127.0.0.1", port, path: "/" }, periodSeconds: 1, failureThreshold: 30 },
                    volumeMounts: [{ name: "kube-api-access", mountPath: sa, readOnly: true }],
                  },
                ],
                containers: [{ name: "source", image: runnerImage, command: ["node", "-e", mainScript] }],
                volumes: [
                  {
                    name: "kube-api-access",
                    projected: {
                      defaultMode: 0o444,
                      sources: [
                        { serviceAccountToken: { path: "token", expirationSeconds: 3607 } },
                        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
                        { downwardAPI: { items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }] } },
                      ],
                    },
                  },
                ],
              },
            },
          },
        },
      });
      const { job, pod } = await finishedJob("brokered");
      expect({ complete: Boolean(jobCondition(job, "Complete")), phase: pod.status?.phase }).toEqual({
        complete: true,
        phase: "Succeeded",
      });
      expect(JSON.parse(terminated(pod, "source")?.message ?? "{}")).toEqual({
        saDir: false,
        withTokens: [],
        envTokens: [],
        broker: { status: 403, asServiceAccount: true },
      });
      const broker = initStatus(pod, "broker")?.state?.terminated;
      expect(broker).toMatchObject({ exitCode: 0, reason: "Completed" });
      expect(JSON.parse(broker?.message ?? "{}")).toEqual({ served: 2, api: { status: 403, asServiceAccount: true }, tokenMode: "444" });
    }, 150_000);

    it("keeps a Pod whose projected ConfigMap is missing in ContainerCreating until it exists; an optional one may stay " +
      "missing", async () => {
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "late-config" },
          spec: {
            restartPolicy: "Never",
            containers: [
              {
                name: "main",
                image: runnerImage,
                command: ["node", "-e", `require("fs").copyFileSync("/config/value", "/dev/termination-log")`],
                volumeMounts: [{ name: "config", mountPath: "/config" }],
              },
            ],
            volumes: [
              {
                name: "config",
                projected: { sources: [{ configMap: { name: "maybe", optional: true } }, { configMap: { name: "late" } }] },
              },
            ],
          },
        },
      });
      const waiting = await waitFor("the Pod waits for its ConfigMap", async () => {
        const current = await core.readNamespacedPod({ name: "late-config", namespace });
        const state = current.status?.containerStatuses?.[0]?.state?.waiting;
        return state?.reason === "ContainerCreating" && state.message
          ? { phase: current.status?.phase, message: state.message }
          : undefined;
      });
      expect(waiting).toEqual({ phase: "Pending", message: `configmap "late" of volume config not found` });
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "late" }, data: { value: "arrived" } } });
      const pod = await endedPod("late-config");
      expect({ phase: pod.status?.phase, message: terminated(pod, "main")?.message }).toEqual({ phase: "Succeeded", message: "arrived" });
    }, 120_000);

    it("runs a container as its user: root-only files stay closed, chroot is refused, volumes are its own", async () => {
      await core.createNamespacedSecret({ namespace, body: { metadata: { name: "group-secret" }, stringData: { key: "for the group" } } });
      const script = `
      const fs = require("fs"), { spawnSync } = require("child_process");
      const attempt = (action) => { try { return action(); } catch (error) { return error.code; } };
      const run = (...argv) => {
        const r = spawnSync(argv[0], argv.slice(1), { encoding: "utf8" });
        return { status: r.status, output: (r.stdout + r.stderr).trim() };
      };
      fs.writeFileSync("/dev/termination-log", JSON.stringify({
        rootOnly: attempt(() => fs.readFileSync("/root-only", "utf8")),
        uid: run("id", "-u").output, groups: run("id", "-G").output,
        chroot: run("chroot", "/", "id"),
        secret: attempt(() => fs.readFileSync("/secret/key", "utf8")),
        scratch: attempt(() => (fs.writeFileSync("/scratch/file", "x"), fs.statSync("/scratch/file").gid)),
      }));`;
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "as-user" },
          spec: {
            restartPolicy: "Never",
            securityContext: { fsGroup: 2000 },
            containers: [
              {
                name: "main",
                image: userImage,
                command: ["node", "-e", script],
                securityContext: {
                  runAsUser: 65532,
                  runAsGroup: 3000,
                  runAsNonRoot: true,
                  allowPrivilegeEscalation: false,
                  capabilities: { drop: ["ALL"] },
                },
                volumeMounts: [
                  { name: "secret", mountPath: "/secret" },
                  { name: "scratch", mountPath: "/scratch" },
                ],
              },
            ],
            volumes: [
              { name: "secret", secret: { secretName: "group-secret", defaultMode: 0o440 } },
              { name: "scratch", emptyDir: {} },
            ],
          },
        },
      });
      const pod = await endedPod("as-user");
      expect({ phase: pod.status?.phase, log: kubelet!.containerLog(namespace, "as-user", "main") }).toEqual({
        phase: "Succeeded",
        log: "",
      });
      expect(JSON.parse(terminated(pod, "main")?.message ?? "{}")).toEqual({
        rootOnly: "EACCES",
        uid: "65532",
        groups: "3000 2000",
        chroot: { status: 125, output: "chroot: cannot change root directory to '/': Operation not permitted" },
        secret: "for the group",
        scratch: 2000,
      });
    }, 120_000);

    /** A second kubelet with `maxParallel` slots, binding only the Pods of its own namespace `<namespace>-<tag>`; copied roots. */
    async function secondKubelet(tag: string, maxParallel: number) {
      const own = `${namespace}-${tag}`;
      await core.createNamespace({ body: { metadata: { name: own } } });
      const started = await startChrootKubelet({
        kubeconfigPath: sharedControlPlane().kubeconfigPath,
        nodeName: `chroot-${suffix}-${tag}`,
        namespaces: [own],
        maxParallel,
        serviceAccountTokens: false,
        rootfs: "copy",
        imageResolver: kubeletImageResolver,
        log: (line) => kubeletLog.push(`${new Date().toISOString()} [${tag}] ${line}`),
      });
      const stop = async () => {
        await core.deleteNamespace({ name: own }).catch(() => undefined);
        await started.stop();
      };
      return { namespace: own, kubelet: started, stop };
    }

    it("runs up to maxParallel Pods at once (a second kubelet: its own namespace, copied roots)", async () => {
      const { namespace: parallelNamespace, kubelet: second, stop } = await secondKubelet("parallel", 2);
      try {
        // Each Pod waits for the other's file: both succeed only if they run at the same time.
        const out = join(work, "parallel-out");
        const rendezvous = (me: string, other: string) =>
          `const fs = require("fs"); fs.writeFileSync("/out/${me}", "here"); const until = Date.now() + 30000;` +
          `const poll = () => fs.existsSync("/out/${other}") ? process.exit(0) : Date.now() > until ? process.exit(1) : ` +
          `setTimeout(poll, 100); poll();`;
        for (const [me, other] of [
          ["left", "right"],
          ["right", "left"],
        ] as const) {
          await core.createNamespacedPod({
            namespace: parallelNamespace,
            body: {
              metadata: { name: me },
              spec: {
                restartPolicy: "Never",
                containers: [
                  {
                    name: "main",
                    image: runnerImage,
                    command: ["node", "-e", rendezvous(me, other)],
                    volumeMounts: [{ name: "out", mountPath: "/out" }],
                  },
                ],
                volumes: [{ name: "out", hostPath: { path: out, type: "DirectoryOrCreate" } }],
              },
            },
          });
        }
        const phases = await waitFor("both Pods end", async () => {
          const pods = await core.listNamespacedPod({ namespace: parallelNamespace });
          const ended = pods.items.filter((pod) => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed");
          return ended.length === 2
            ? Object.fromEntries(ended.map((pod) => [pod.metadata?.name ?? "", [pod.spec?.nodeName, pod.status?.phase]] as const))
            : undefined;
        });
        expect(second.rootfsMode).toBe("copy");
        expect(phases).toEqual({ left: [second.nodeName, "Succeeded"], right: [second.nodeName, "Succeeded"] });
      } finally {
        await stop();
      }
    }, 120_000);

    it("gives a service's Pod no slot: with one slot, a Job-like Pod still runs beside a Deployment-like one", async () => {
      const { namespace: serviceNamespace, stop } = await secondKubelet("service", 1);
      try {
        const container = (script: string) => ({ name: "main", image: runnerImage, command: ["node", "-e", script] });
        // The service first (restartPolicy Always, as a Deployment's Pod): it never ends to give a slot back.
        await core.createNamespacedPod({
          namespace: serviceNamespace,
          body: { metadata: { name: "service" }, spec: { containers: [container("setInterval(() => {}, 1000)")] } },
        });
        await waitFor("the service running", async () => {
          const pod = await core.readNamespacedPod({ namespace: serviceNamespace, name: "service" });
          return pod.status?.phase === "Running" ? true : undefined;
        });
        await core.createNamespacedPod({
          namespace: serviceNamespace,
          body: { metadata: { name: "job" }, spec: { restartPolicy: "Never", containers: [container("process.exit(0)")] } },
        });
        const phases = await waitFor("the job-like Pod ends", async () => {
          const pods = await core.listNamespacedPod({ namespace: serviceNamespace });
          const job = pods.items.find((pod) => pod.metadata?.name === "job");
          return job?.status?.phase === "Succeeded" || job?.status?.phase === "Failed"
            ? Object.fromEntries(pods.items.map((pod) => [pod.metadata?.name ?? "", pod.status?.phase] as const))
            : undefined;
        });
        expect(phases).toEqual({ service: "Running", job: "Succeeded" });
      } finally {
        await stop();
      }
    }, 120_000);

    it("keeps a Pod whose image cannot be pulled Pending with ErrImagePull, and deletes it on request", async () => {
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "no-image" },
          spec: { restartPolicy: "Never", containers: [{ name: "main", image: `${registry!.host}/captf/missing:v1` }] },
        },
      });
      const waiting = await waitFor("the Pod waits for its image", async () => {
        const current = await core.readNamespacedPod({ name: "no-image", namespace });
        const state = current.status?.containerStatuses?.[0]?.state?.waiting;
        return state?.reason === "ErrImagePull" ? { phase: current.status?.phase, state } : undefined;
      });
      expect(waiting.phase).toBe("Pending");
      expect(waiting.state.message).toContain("captf/missing:v1");
      await core.deleteNamespacedPod({ name: "no-image", namespace });
      await podGone("no-image");
    }, 120_000);
  },
);
