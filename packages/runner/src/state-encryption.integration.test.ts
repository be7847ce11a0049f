import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { renderBackendRoot } from "@captf/render";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, sharedControlPlane } from "@captf/testkit";
import { localBackendOverride, RunnerFixture, stepNamesOf, type RunnerRun } from "./runner-fixture.test-support.js";

jest.setTimeout(90_000);

const root = {
  variables: { name: { type: "string" }, generation: { type: "number" }, sleep_seconds: { type: "number" } },
  outputs: ["provider_id", "generation"],
};
const passphrase = "canary-passphrase-0d5f7a2e9b41";
const tfEncryption = (phrase: string) =>
  JSON.stringify({
    key_provider: { pbkdf2: { main: { passphrase: phrase } } },
    method: { aes_gcm: { main: { keys: "key_provider.pbkdf2.main" } } },
    state: { method: "method.aes_gcm.main" },
  });
const encrypting = { args: ["--state-encryption"], env: { TF_ENCRYPTION: tfEncryption(passphrase) } };
const everything = (run: RunnerRun) => `${run.stdout}\n${run.stderr}\n${JSON.stringify(run.result)}`;

// spec.stateEncryption in the runner, against real OpenTofu: TF_ENCRYPTION reaches the runtime only with --state-encryption, the
// state it writes is encrypted, an encrypted backup restores, and the passphrase is in no output.
describeWithTools(["tofu"], "runner run with state encryption (OpenTofu, local backend)", () => {
  let fixture: RunnerFixture;
  beforeAll(async () => {
    fixture = await RunnerFixture.create("module", root, "tofu");
    await fixture.setInputs({ name: "sealed", generation: 1, sleep_seconds: 0 });
  });
  afterAll(() => fixture.remove());

  it("applies with --state-encryption: the state is encrypted, no output of the module is in it in plain", async () => {
    const run = await fixture.run("apply", encrypting);
    expect(run.exitCode).toBe(0);
    expect(stepNamesOf(run)).toEqual(["init", "validate", "apply"]);
    const stored = await readFile(fixture.statePath, "utf8");
    expect(JSON.parse(stored)).toMatchObject({ encryption_version: "v0", encrypted_data: expect.any(String) });
    expect(stored).not.toContain("noop:///sealed");
    expect(await decryptedState()).toMatchObject({ outputs: { provider_id: { value: "noop:///sealed" } } });
    expect(everything(run)).not.toContain(passphrase);
  });

  it("drops TF_ENCRYPTION without --state-encryption (a credentials Secret cannot turn it on), naming it only", async () => {
    const plain = await RunnerFixture.create("module", root, "tofu");
    try {
      await plain.setInputs({ name: "plain", generation: 1, sleep_seconds: 0 });
      const run = await plain.run("apply", { env: encrypting.env });
      expect(run.exitCode).toBe(0);
      expect(run.stderr).toContain("TF_ENCRYPTION");
      expect((await plain.state()).outputs.provider_id!.value).toBe("noop:///plain");
      expect(everything(run)).not.toContain(passphrase);
    } finally {
      await plain.remove();
    }
  });

  it("runs nothing with --state-encryption and no TF_ENCRYPTION: no state is written in plain", async () => {
    const bare = await RunnerFixture.create("module", root, "tofu");
    try {
      await bare.setInputs({ name: "bare", generation: 1, sleep_seconds: 0 });
      const run = await bare.run("apply", { args: ["--state-encryption"] });
      expect(run.exitCode).toBe(1);
      expect(run.result.steps).toEqual([]);
      expect(run.result.error).toEqual({
        kind: "step",
        step: "prepare",
        summary: "the object encrypts its state, but TF_ENCRYPTION is empty: nothing ran, so no state is written in plain",
      });
      expect(existsSync(bare.statePath)).toBe(false);
    } finally {
      await bare.remove();
    }
  });

  /** The fixture's state as OpenTofu decrypts it (`state pull` of a copy, with the passphrase). */
  async function decryptedState(): Promise<{ serial: number; outputs: Record<string, { value: unknown }> }> {
    const dir = await mkdtemp(join(tmpdir(), "decrypted-state-"));
    try {
      await writeFile(join(dir, "terraform.tfstate"), await readFile(fixture.statePath));
      const env = { PATH: process.env.PATH ?? "", HOME: dir, TF_CLI_CONFIG_FILE: "", ...encrypting.env };
      return JSON.parse(execFileSync(fixture.runtime, ["state", "pull"], { cwd: dir, env, encoding: "utf8" })) as never;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async function restoreConfig(name: string, state: string): Promise<string> {
    const configDir = join(fixture.base, name);
    await fixture.writeConfig("main.tf.json", JSON.parse(renderBackendRoot()["main.tf.json"]), configDir);
    await fixture.writeConfig("terraform.tfvars.json", {}, configDir);
    await fixture.writeConfig("backend_override.tf.json", localBackendOverride, configDir);
    await mkdir(join(configDir, "restore"), { recursive: true });
    await writeFile(join(configDir, "restore", "0"), gzipSync(state));
    return configDir;
  }

  it("restores an encrypted backup: the runtime decrypts it, pushes it, and the state stays encrypted", async () => {
    const backup = await readFile(fixture.statePath, "utf8");
    await fixture.setInputs({ name: "sealed", generation: 2, sleep_seconds: 0 });
    expect((await fixture.run("apply", encrypting)).exitCode).toBe(0);
    const configDir = await restoreConfig("restore-config", backup);
    const run = await fixture.run("restore", {
      ...encrypting,
      args: [...encrypting.args, "--restore-chunks=1", "--restore-resources=2"],
      configDir,
      workdir: join(fixture.base, "restore-work"),
    });
    expect(run.result.error).toBeNull();
    expect(stepNamesOf(run)).toEqual(["init", "state-push", "state-list"]);
    expect(existsSync(join(fixture.base, "restore-work", "state-decrypt"))).toBe(false);
    const stored = await readFile(fixture.statePath, "utf8");
    expect(JSON.parse(stored)).toMatchObject({ encryption_version: "v0" });
    expect(stored).not.toContain("noop:///sealed");
    // The restored state is the backup's (generation 1, applied before generation 2), as the runtime decrypts it.
    expect(await decryptedState()).toMatchObject({ outputs: { generation: { value: 1 } } });
    expect(everything(run)).not.toContain(passphrase);
  });

  it("fails a restore whose encrypted backup the key cannot read, saying so without the key", async () => {
    const backup = await readFile(fixture.statePath, "utf8");
    const configDir = await restoreConfig("restore-wrong-key", backup);
    const wrong = "another-passphrase-7c19e0aa42";
    const run = await fixture.run("restore", {
      args: ["--state-encryption", "--restore-chunks=1"],
      env: { TF_ENCRYPTION: tfEncryption(wrong) },
      configDir,
      workdir: join(fixture.base, "restore-wrong-work"),
    });
    expect(run.exitCode).toBe(1);
    expect(run.result.steps).toEqual([]);
    expect(run.result.error).toMatchObject({ kind: "step", step: "prepare" });
    expect(run.result.error!.summary).toMatch(/^the backup is encrypted and the runtime could not decrypt it with TF_ENCRYPTION/);
    expect(everything(run)).not.toContain(wrong);
  });
});

// Terraform has no state encryption: it would ignore TF_ENCRYPTION and write the state in plain.
describeWithTools(["terraform"], "runner run with state encryption on Terraform", () => {
  it("refuses before any step, as the image-layout error, and writes no state", async () => {
    const fixture = await RunnerFixture.create("module", root, "terraform");
    try {
      await fixture.setInputs({ name: "refused", generation: 1, sleep_seconds: 0 });
      const run = await fixture.run("apply", encrypting);
      expect(run.exitCode).toBe(1);
      expect(run.result.steps).toEqual([]);
      expect(run.result.error).toEqual({
        kind: "image-layout",
        step: null,
        summary: expect.stringMatching(
          /^state encryption is asked for .* but \/captf\/runtime is Terraform v1\.\d+\.\d+, which cannot encrypt/,
        ),
      });
      expect(existsSync(fixture.statePath)).toBe(false);
      expect(everything(run)).not.toContain(passphrase);
    } finally {
      await fixture.remove();
    }
  });
});

// A failed apply's errored.tfstate is encrypted too (tofu writes it with the state's method), and state push reads its file as plain
// state: the runner decrypts it first, or an apply whose save failed once would lose its state.
describeWithTools(
  ["tofu", "etcd", "kube-apiserver", "kube-controller-manager"],
  "runner run with state encryption, kubernetes backend",
  () => {
    it("decrypts errored.tfstate before pushing it: the push reads the state and fails only on its size", async () => {
      const plane = sharedControlPlane();
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      const core = kc.makeApiClient(k8s.CoreV1Api);
      const namespace = `encrypted-backend-${Date.now().toString(36)}`;
      await core.createNamespace({ body: { metadata: { name: namespace } } });
      const fixture = await RunnerFixture.create("module", root, "tofu");
      try {
        await rm(join(fixture.configDir, "backend_override.tf.json"));
        // 1 MiB that compresses to almost nothing in plain; encrypted, the state no longer fits the 1 MiB a Secret holds.
        await fixture.setInputs({ name: "x".repeat(1 << 20), generation: 1, sleep_seconds: 0 });
        const run = await fixture.run("apply", {
          ...encrypting,
          backendConfig: [`config_path=${plane.kubeconfigPath}`, `namespace=${namespace}`, "secret_suffix=00c0ffee00c0ffee-m"],
        });
        expect(run.exitCode).toBe(1);
        expect(run.result.error).toMatchObject({ kind: "state-save", step: "apply" });
        expect(stepNamesOf(run)).toEqual(["init", "validate", "apply", "state-push"]);
        const output = `${run.stdout}\n${run.stderr}`;
        expect(output).not.toContain("Failed to read source state");
        expect(output.match(/Failed to (save|persist|write) state/g)?.length ?? 0).toBeGreaterThanOrEqual(2);
        expect(everything(run)).not.toContain(passphrase);
      } finally {
        await fixture.remove();
        await core.deleteNamespace({ name: namespace }).catch(() => undefined);
      }
    });
  },
);
