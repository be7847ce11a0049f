import { describe, expect, it } from "@jest/globals";
import type { TerraformNotificationReceiver } from "../api/terraformnotificationreceiver.js";
import { validateTerraformNotificationReceiver } from "./terraformnotificationreceiver.js";

const receiver = (spec: Partial<TerraformNotificationReceiver["spec"]>): TerraformNotificationReceiver => ({
  metadata: { name: "ops" },
  spec: { type: "slack", url: "https://chat.example/incoming", ...spec },
});

describe("validateTerraformNotificationReceiver", () => {
  it("admits a receiver with a readable selector and URL", () => {
    expect(validateTerraformNotificationReceiver(undefined, receiver({ namespaceSelector: { matchLabels: { team: "a" } } }))).toEqual({
      allowed: true,
    });
  });

  it("refuses a selector the manager could not read and an inline URL that is no URL, without quoting the URL", () => {
    const verdict = validateTerraformNotificationReceiver(
      undefined,
      receiver({ url: "http://[canary", namespaceSelector: { matchExpressions: [{ key: "team", operator: "In" }] } }),
    );
    expect(verdict.allowed).toBe(false);
    expect(JSON.stringify(verdict)).not.toContain("canary");
    expect(verdict).toMatchObject({ reasons: [expect.stringContaining("spec.namespaceSelector"), "spec.url: not a valid URL"] });
  });

  it("warns when an inline URL looks like it carries a token", () => {
    expect(validateTerraformNotificationReceiver(undefined, receiver({ url: "https://hooks.slack.com/services/T/B/x" }))).toEqual({
      allowed: true,
      warnings: ["spec.url looks like it carries a token: anyone who may read this receiver sees it; use urlSecretRef"],
    });
  });
});
