/**
 * OpenTofu state encryption in a Job (spec.stateEncryption): TF_ENCRYPTION reaches the runtime untouched, the
 * runner first checks that the runtime can encrypt (Terraform ignores TF_ENCRYPTION and would write the state
 * in plain), redacts its key material, and decrypts an encrypted state file before `state push` (which reads its file as plain
 * state): a restore's backup, a failed apply's errored.tfstate. No message here holds the configuration's value.
 */
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runStep } from "./exec.js";
import { secretsOf, type Secret } from "./redact.js";
import { failureSummary } from "./summary.js";
import type { Redactor } from "./redact.js";
import type { PreparedWorkspace } from "./workspace.js";

/** The variable OpenTofu reads its encryption configuration from. */
export const encryptionVariable = "TF_ENCRYPTION";
/** The first OpenTofu release that encrypts state. */
const firstEncryptingTofu = { major: 1, minor: 7 };

/** Why a runtime whose `version` printed `versionText` must not get encrypted state; undefined when it can. Pure. */
export function encryptionRuntimeProblem(versionText: string): string | undefined {
  const first = versionText.split("\n").find((line) => line.trim() !== "") ?? "";
  const tofu = /^OpenTofu v(\d+)\.(\d+)\./.exec(first.trim());
  if (tofu) {
    const [major, minor] = [Number(tofu[1]), Number(tofu[2])];
    const encrypts = major > firstEncryptingTofu.major || (major === firstEncryptingTofu.major && minor >= firstEncryptingTofu.minor);
    if (encrypts) return undefined;
  }
  const runtime = first.trim() ? first.trim().slice(0, 80) : "a runtime whose version could not be read";
  return (
    `state encryption is asked for (spec.stateEncryption gives the Job ${encryptionVariable}), but /captf/runtime is ${runtime}, ` +
    `which cannot encrypt state and would write it in plain: nothing ran. Use an image whose runtime is OpenTofu ` +
    `${firstEncryptingTofu.major}.${firstEncryptingTofu.minor} or later`
  );
}

/** The configuration's values to redact: the whole value and every passphrase in it. */
export function encryptionSecrets(configuration: string): Secret[] {
  const passphrases: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === "object") {
      for (const [key, inner] of Object.entries(value)) {
        if (key === "passphrase" && typeof inner === "string") passphrases.push(inner);
        else walk(inner);
      }
    }
  };
  try {
    walk(JSON.parse(configuration));
  } catch {
    // Not JSON (HCL): tofu reports it; the whole value is still redacted.
  }
  return secretsOf([configuration, ...passphrases]);
}

/** An OpenTofu encrypted state document (its envelope: serial, lineage and meta in plain, the state in encrypted_data). */
export function isEncryptedStateDocument(text: string): boolean {
  try {
    const document = JSON.parse(text) as Record<string, unknown> | null;
    return typeof document === "object" && document !== null && typeof document.encrypted_data === "string";
  } catch {
    return false;
  }
}

/**
 * Replaces an encrypted state file (a restore's backup, or the errored.tfstate a failed apply left) by its plain state, decrypted by
 * the runtime itself with TF_ENCRYPTION: `state pull` of a local copy in a directory of its own (own data directory, so the kubernetes
 * backend's is not used), since `state push` reads its file as plain state. The plain state stays in the Pod's work directory, as the
 * runtime holds it anyway. Throws with the runtime's redacted diagnostics.
 */
export async function decryptStateFile(options: {
  bin: readonly string[];
  prepared: PreparedWorkspace;
  /** The encrypted state file, rewritten in place. */
  file: string;
  workdir: string;
  signal: AbortSignal;
  stopTimeoutMs: number;
  redact: Redactor;
}): Promise<void> {
  const scratch = join(options.workdir, "state-decrypt");
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true, mode: 0o700 });
  copyFileSync(options.file, join(scratch, "terraform.tfstate"));
  try {
    const outcome = await runStep({
      command: [...options.bin, "state", "pull"],
      cwd: scratch,
      env: { ...options.prepared.env, TF_DATA_DIR: join(scratch, ".terraform") },
      captureStdout: true,
      signal: options.signal,
      stopTimeoutMs: options.stopTimeoutMs,
    });
    if (outcome.exit !== 0 || outcome.stdout.trim() === "") {
      const fallback = `state pull exited ${outcome.exit}${outcome.failure ? `: ${outcome.failure}` : ""}`;
      const why = failureSummary({ step: "state-pull", stderrTail: outcome.stderrTail, fallback }, options.redact);
      throw new Error(
        `the runtime could not decrypt it with ${encryptionVariable} (spec.stateEncryption's Secret; a key rotated out of its ` +
          `fallback chain no longer reads it): ${why}`,
      );
    }
    writeFileSync(options.file, outcome.stdout, { mode: 0o600 });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** An encrypted state file, decrypted in place (see decryptStateFile); a plain one is left as it is. Returns whether it was encrypted. */
export async function decryptIfEncrypted(options: Parameters<typeof decryptStateFile>[0]): Promise<boolean> {
  if (!isEncryptedStateDocument(readFileSync(options.file, "utf8"))) return false;
  await decryptStateFile(options);
  return true;
}

/** Runs `version` and says why this runtime must not get encrypted state; undefined when it may. */
export async function encryptingRuntimeProblem(
  bin: readonly string[],
  prepared: PreparedWorkspace,
  signal: AbortSignal,
): Promise<string | undefined> {
  const outcome = await runStep({
    command: [...bin, "version"],
    cwd: prepared.rootDir,
    env: { ...prepared.env, GOMAXPROCS: "1" },
    captureStdout: true,
    signal,
    stopTimeoutMs: 1000,
  });
  return encryptionRuntimeProblem(outcome.exit === 0 ? outcome.stdout : "");
}
