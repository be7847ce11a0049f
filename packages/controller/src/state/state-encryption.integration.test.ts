import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools, requireTool, sharedControlPlane } from "@captf/testkit";
import { KubeClient } from "../runtime/kube-client.js";
import { readState } from "./read-state.js";
import { decodeStateSecretsWithDecryption, parseStateEncryption, type StateDecryption } from "./state-encryption.js";

// Real OpenTofu encrypts, captf decrypts: each case runs `tofu apply` with TF_ENCRYPTION in its JSON
// form and reads what tofu wrote, checked against what `tofu state pull` (tofu's own decryption) says.
const rawKey = [...Array(32).keys()].map((byte) => (byte * 7 + 3) % 256);

interface Passphrase {
  provider: string;
  passphrase: string;
}
const first: Passphrase = { provider: "first", passphrase: "canary-first-passphrase-5d1c07" };
const second: Passphrase = { provider: "second", passphrase: "canary-second-passphrase-93be2a" };

/** TF_ENCRYPTION in JSON: the current passphrase encrypts; a previous one, kept under its provider name, is the fallback. */
function passphraseEncryption(current: Passphrase, previous?: Passphrase): string {
  const providers = previous ? [current, previous] : [current];
  return JSON.stringify({
    key_provider: { pbkdf2: Object.fromEntries(providers.map((p) => [p.provider, { passphrase: p.passphrase }])) },
    method: { aes_gcm: Object.fromEntries(providers.map((p) => [p.provider, { keys: `key_provider.pbkdf2.${p.provider}` }])) },
    state: {
      method: `method.aes_gcm.${current.provider}`,
      ...(previous ? { fallback: { method: `method.aes_gcm.${previous.provider}` } } : {}),
    },
  });
}

// tofu decrypts with decryption_key alone: a literal key gives both.
const rawKeyEncryption = JSON.stringify({
  method: { aes_gcm: { raw: { keys: { encryption_key: rawKey, decryption_key: rawKey } } } },
  state: { method: "method.aes_gcm.raw" },
});

function decryptionOf(text: string): StateDecryption {
  const parsed = parseStateEncryption(text);
  if (parsed.kind !== "ok") throw new Error(parsed.message);
  return parsed.decryption;
}

describeWithTools(["tofu", "etcd", "kube-apiserver", "kube-controller-manager"], "encrypted state OpenTofu wrote", () => {
  const namespace = `state-encrypted-${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), "captf-state-encrypted-"));
  const tofu = requireTool("tofu");
  let client: KubeClient;

  beforeAll(async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(sharedControlPlane().kubeconfigPath);
    client = new KubeClient(kc);
    await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    writeFileSync(join(dir, "cli.tfrc"), "");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Applies a one-resource root in its own folder; returns the folder and what `tofu state pull` decrypts. */
  function apply(
    root: string,
    encryption: string,
    greeting: string,
    backend?: { suffix: string },
  ): { cwd: string; pulled: { serial: number; lineage: string } } {
    const cwd = join(dir, root);
    mkdirSync(cwd, { recursive: true });
    writeFileSync(
      join(cwd, "main.tf.json"),
      JSON.stringify({
        ...(backend ? { terraform: { backend: { kubernetes: {} } } } : {}),
        resource: { terraform_data: { greeting: { input: greeting } } },
        output: { greeting: { value: greeting } },
      }),
    );
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      TF_CLI_CONFIG_FILE: join(dir, "cli.tfrc"),
      TF_IN_AUTOMATION: "1",
      TF_ENCRYPTION: encryption,
    };
    const backendConfig = backend
      ? [
          `-backend-config=config_path=${sharedControlPlane().kubeconfigPath}`,
          `-backend-config=namespace=${namespace}`,
          `-backend-config=secret_suffix=${backend.suffix}`,
        ]
      : [];
    execFileSync(tofu, ["init", "-input=false", "-no-color", ...backendConfig], { cwd, env, stdio: "pipe" });
    execFileSync(tofu, ["apply", "-auto-approve", "-input=false", "-no-color"], { cwd, env, stdio: "pipe" });
    const pulled = JSON.parse(execFileSync(tofu, ["state", "pull"], { cwd, env, stdio: ["ignore", "pipe", "pipe"] }).toString()) as {
      serial: number;
      lineage: string;
    };
    return { cwd, pulled };
  }

  /** The local backend's state file as the kubernetes backend would hold it: one gzip Secret. */
  async function readLocalState(cwd: string, decryption: StateDecryption | undefined) {
    const suffix = "0000000000000000-m";
    const file = readFileSync(join(cwd, "terraform.tfstate"));
    expect(JSON.parse(file.toString())).toMatchObject({ encryption_version: "v0" });
    const secrets = [{ name: stateSecretName(suffix), data: { tfstate: gzipSync(file).toString("base64") } }];
    return decodeStateSecretsWithDecryption(suffix, secrets, decryption);
  }

  it("reads serial, lineage and outputs of state tofu encrypted with a pbkdf2 passphrase; a wrong one is StateEncrypted", async () => {
    const { cwd, pulled } = apply("pbkdf2", passphraseEncryption(first), "hello");
    expect(await readLocalState(cwd, decryptionOf(passphraseEncryption(first)))).toMatchObject({
      kind: "ok",
      state: { serial: pulled.serial, lineage: pulled.lineage, outputs: { greeting: "hello" }, managedResources: 1 },
    });
    const wrong = await readLocalState(cwd, decryptionOf(passphraseEncryption({ ...first, passphrase: second.passphrase })));
    expect(wrong).toEqual({
      kind: "unreadable",
      reason: "StateEncrypted",
      message:
        "the state in tfstate-default-0000000000000000-m is encrypted and no configured method decrypts it " +
        "(method.aes_gcm.first: the key does not open it)",
    });
    expect(await readLocalState(cwd, undefined)).toMatchObject({ kind: "unreadable", reason: "StateEncrypted" });
  }, 120_000);

  it("rotates through fallback: the old passphrase reads until tofu rewrites the state under the new one", async () => {
    apply("rotation", passphraseEncryption(first), "before");
    const rotation = decryptionOf(passphraseEncryption(second, first));
    const cwd = join(dir, "rotation");
    expect(await readLocalState(cwd, rotation)).toMatchObject({ kind: "ok", state: { outputs: { greeting: "before" } } });

    const { pulled } = apply("rotation", passphraseEncryption(second, first), "after");
    for (const decryption of [rotation, decryptionOf(passphraseEncryption(second))]) {
      expect(await readLocalState(cwd, decryption)).toMatchObject({
        kind: "ok",
        state: { serial: pulled.serial, lineage: pulled.lineage, outputs: { greeting: "after" } },
      });
    }
    const stale = await readLocalState(cwd, decryptionOf(passphraseEncryption(first)));
    expect(stale).toEqual({
      kind: "unreadable",
      reason: "StateEncrypted",
      message:
        "the state in tfstate-default-0000000000000000-m is encrypted and no configured method decrypts it " +
        "(method.aes_gcm.first: the state carries no metadata for key_provider.pbkdf2.first)",
    });
    for (const { passphrase } of [first, second]) expect(JSON.stringify(stale)).not.toContain(passphrase);
  }, 180_000);

  it("reads state encrypted with a literal aes_gcm key", async () => {
    const { cwd, pulled } = apply("raw", rawKeyEncryption, "raw");
    expect(await readLocalState(cwd, decryptionOf(rawKeyEncryption))).toMatchObject({
      kind: "ok",
      state: { serial: pulled.serial, lineage: pulled.lineage, outputs: { greeting: "raw" } },
    });
  }, 120_000);

  it("reads the kubernetes backend's encrypted Secret through the manager's state read", async () => {
    const suffix = stateSecretSuffix({ role: "machine", namespace, name: "encrypted" });
    const encryption = passphraseEncryption(second);
    const { pulled } = apply("kubernetes", encryption, "in-cluster", { suffix });
    expect(await readState(client, namespace, suffix, undefined, decryptionOf(encryption))).toMatchObject({
      kind: "ok",
      state: { serial: pulled.serial, lineage: pulled.lineage, outputs: { greeting: "in-cluster" }, secrets: 1 },
    });
    expect(await readState(client, namespace, suffix)).toMatchObject({ kind: "unreadable", reason: "StateEncrypted" });
  }, 120_000);
});
