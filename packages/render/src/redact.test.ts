import { describe, expect, it } from "@jest/globals";
import { renderGeneratedRoot } from "./generated-root.js";
import { redactionFailed, redactRenderedInputs } from "./redact.js";
import { bootstrapData, machineInputs, userVariables } from "./render-fixtures.test-support.js";

describe("redactRenderedInputs", () => {
  it("hides bootstrap data and sensitive variables, keeping their length", () => {
    const tfvars = renderGeneratedRoot("machine", machineInputs(), userVariables)["terraform.tfvars.json"];
    const redacted = redactRenderedInputs(tfvars, ["db_password", "subnet_ids"]);
    expect(redacted).not.toContain(bootstrapData);
    expect(redacted).not.toContain("s3cr3t");
    const parsed = JSON.parse(redacted) as Record<string, unknown>;
    expect(parsed.bootstrap_data).toBe(`<redacted:len=${bootstrapData.length}>`);
    expect(parsed.db_password).toBe("<redacted:len=11>");
    expect(parsed.subnet_ids).toBe(`<redacted:len=${'["subnet-a","subnet-b"]'.length}>`);
    expect(parsed.instance_type).toBe("t3.large");
  });

  it.each([
    ["not JSON", "{bootstrap_data: CANARY"],
    ["an array", '["CANARY"]'],
    ["a string", '"CANARY"'],
  ])("gives %s no partial output", (_, text) => {
    expect(redactRenderedInputs(text)).toBe(redactionFailed);
  });
});
