import { describe, expect, it } from "@jest/globals";
import { redactor } from "./redact.js";
import { encryptionRuntimeProblem, encryptionSecrets, isEncryptedStateDocument } from "./state-encryption.js";

describe("encryptionRuntimeProblem", () => {
  it.each(["OpenTofu v1.7.0\non linux_amd64\n", "OpenTofu v1.12.6\non linux_amd64\n", "OpenTofu v2.0.0-beta1\n"])(
    "lets %j encrypt",
    (text) => expect(encryptionRuntimeProblem(text)).toBeUndefined(),
  );

  it.each([
    ["Terraform v1.5.7\non linux_amd64\n", "Terraform v1.5.7"],
    ["OpenTofu v1.6.2\non linux_amd64\n", "OpenTofu v1.6.2"],
    ["", "a runtime whose version could not be read"],
  ])("refuses %j, naming what it is", (text, named) => {
    expect(encryptionRuntimeProblem(text)).toBe(
      `state encryption is asked for (spec.stateEncryption gives the Job TF_ENCRYPTION), but /captf/runtime is ${named}, which ` +
        "cannot encrypt state and would write it in plain: nothing ran. Use an image whose runtime is OpenTofu 1.7 or later",
    );
  });
});

describe("encryptionSecrets", () => {
  it("redacts the whole configuration and each passphrase in it", () => {
    const configuration = JSON.stringify({
      key_provider: { pbkdf2: { current: { passphrase: "new-passphrase-1" }, old: [{ passphrase: "old-passphrase-2" }] } },
    });
    const redact = redactor(encryptionSecrets(configuration));
    expect(redact(`a ${configuration} b new-passphrase-1 c old-passphrase-2`)).toBe("a (sensitive) b (sensitive) c (sensitive)");
  });

  it("redacts a configuration that is not JSON as a whole", () => {
    expect(redactor(encryptionSecrets("key_provider pbkdf2 x {}"))("say key_provider pbkdf2 x {}")).toBe("say (sensitive)");
  });
});

it("tells OpenTofu's encrypted envelope from plain state", () => {
  expect(isEncryptedStateDocument('{"serial":1,"lineage":"l","meta":{},"encrypted_data":"AAAA","encryption_version":"v0"}')).toBe(true);
  expect(isEncryptedStateDocument('{"version":4,"serial":1,"lineage":"l","outputs":{}}')).toBe(false);
  expect(isEncryptedStateDocument("not json")).toBe(false);
});
