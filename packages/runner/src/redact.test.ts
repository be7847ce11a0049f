import { describe, expect, it } from "@jest/globals";
import { environmentSecrets, planSecrets, RedactingLineWriter, redactor, secretsOf, variableSecrets } from "./redact.js";

describe("redactor", () => {
  it("replaces every occurrence, the longest value first so no tail of it stays visible", () => {
    const redact = redactor(secretsOf(["abcd", "abcdefgh"]));
    expect(redact("x abcdefgh y abcd z")).toBe("x (sensitive) y (sensitive) z");
  });

  it("leaves values shorter than 4 bytes alone: they are everywhere in ordinary text", () => {
    expect(redactor(secretsOf(["on", "dev"]))("turn dev on")).toBe("turn dev on");
  });

  it("also matches the JSON-escaped form, as validate -json prints it", () => {
    const redact = redactor(secretsOf(['pa"ss\\word']));
    expect(redact(JSON.stringify({ detail: 'value pa"ss\\word here' }))).toBe('{"detail":"value (sensitive) here"}');
  });

  it("redacts each long line of a multi-line secret on its own, and short lines only above its minimum", () => {
    const key = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nend\n-----END KEY-----";
    const redact = redactor(planSecrets([key]));
    expect(redact("error near MIIEvQIBADANBgkqhkiG9w0BAQEFAASC here")).toBe("error near (sensitive) here");
    expect(redact("the end")).toBe("the end");
    expect(redactor(secretsOf(["line one\nfour"]))("four")).toBe("(sensitive)");
  });

  it("keeps the largest line minimum when two secrets share a line", () => {
    const redact = redactor([...planSecrets(["#!/bin/sh\nthen\nexport TOKEN=abcdefghijklmnop"]), ...secretsOf(["x\nthen"])]);
    expect(redact("if then fi")).toBe("if then fi");
    expect(redact("export TOKEN=abcdefghijklmnop")).toBe("(sensitive)");
  });

  it(
    "finds a secret with spaces that the runtime wrapped: a space became a line break, on its own or before a diagnostic box's " + "bar",
    () => {
      const redact = redactor(secretsOf(["correct horse battery staple"]));
      expect(redact("rejected the passphrase correct\nhorse battery staple and")).toBe("rejected the passphrase (sensitive) and");
      expect(redact("│ rejected correct horse\n│ battery  staple.")).toBe("│ rejected (sensitive).");
      expect(redact("correct horses battery staple")).toBe("correct horses battery staple");
    },
  );

  it("escapes regular-expression characters in values", () => {
    expect(redactor(secretsOf(["a.b*c(d)"]))("a.b*c(d) axbbc")).toBe("(sensitive) axbbc");
  });
});

describe("environmentSecrets", () => {
  it("takes credential-like names at any length and other values from 16 bytes, never paths the runner sets", () => {
    const values = environmentSecrets({
      AWS_SECRET_ACCESS_KEY: "shortkey",
      GOOGLE_CREDENTIALS: "{}{}",
      REGION: "eu-west-1",
      OPAQUE: "0123456789abcdef",
      HOME: "/captf/work/with/a/long/path",
      TF_DATA_DIR: "/captf/work/.terraform",
      PATH: "/usr/local/bin:/usr/bin:/bin",
      KUBERNETES_SERVICE_HOST: "10.96.0.1.example.internal",
      HOSTNAME: "captf-apply-machine-0-x7k2p",
      EMPTY_TOKEN: "",
    }).map((secret) => secret.value);
    expect(values.sort()).toEqual(["0123456789abcdef", "shortkey", "{}{}"]);
  });
});

describe("variableSecrets", () => {
  const main = JSON.stringify({
    variable: {
      password: { sensitive: true },
      settings: { sensitive: true },
      name: {},
      bootstrap_data: { type: "string", sensitive: true },
    },
  });
  const script = "#cloud-config\nruncmd:\n  - echo join-token-0123456789abcdef\n";
  const tfvars = JSON.stringify({
    password: "hunter2-password",
    settings: { nested: ["leaf-secret-one"], count: 3 },
    name: "public-name-value",
    bootstrap_data: Buffer.from(script).toString("base64"),
  });

  it("takes the string leaves of sensitive variables and bootstrap_data raw and decoded", () => {
    const redact = redactor(variableSecrets(main, tfvars));
    expect(redact("hunter2-password leaf-secret-one public-name-value")).toBe("(sensitive) (sensitive) public-name-value");
    expect(redact(Buffer.from(script).toString("base64"))).toBe("(sensitive)");
    expect(redact(`got: - echo join-token-0123456789abcdef`)).toBe("got: (sensitive)");
    // short, ordinary lines of a script are not secrets on their own
    expect(redact("runcmd:")).toBe("runcmd:");
  });

  it("gives nothing for files it cannot read, and does not decode what is not base64 text", () => {
    expect(variableSecrets(main, "not json")).toEqual([]);
    expect(variableSecrets(undefined, undefined)).toEqual([]);
    expect(variableSecrets("{}", JSON.stringify({ bootstrap_data: "not base64!" })).map((secret) => secret.value)).toEqual(["not base64!"]);
  });
});

describe("RedactingLineWriter", () => {
  it("finds a secret split across two writes and passes whole lines on", () => {
    const out: string[] = [];
    const writer = new RedactingLineWriter(
      (text) => out.push(text),
      () => redactor(secretsOf(["canary-0123456789"])),
    );
    writer.write("first canary-01234");
    writer.write("56789 line\nsecond ");
    expect(out.join("")).toBe("first (sensitive) line\n");
    writer.write("canary-0123456789");
    writer.flush();
    expect(out.join("")).toBe("first (sensitive) line\nsecond (sensitive)");
  });

  it("holds back the last lines while a wrapped secret may still continue, so one split across writes and lines is found", () => {
    const out: string[] = [];
    const writer = new RedactingLineWriter(
      (text) => out.push(text),
      () => redactor(secretsOf(["correct horse battery staple"])),
    );
    writer.write("line one\nthe passphrase correct\n");
    writer.write("horse battery\nstaple for this account\n");
    writer.flush();
    expect(out.join("")).toBe("line one\nthe passphrase (sensitive) for this account\n");
    expect(out.join("")).not.toMatch(/correct|horse|battery|staple/);
    writer.write("\n\n\n");
    writer.flush();
    expect(out.join("")).toBe("line one\nthe passphrase (sensitive) for this account\n\n\n\n");
  });

  it("uses the redactor current at each write", () => {
    let redact = redactor([]);
    const out: string[] = [];
    const writer = new RedactingLineWriter(
      (text) => out.push(text),
      () => redact,
    );
    writer.write("value-learned-late\n");
    redact = redactor(secretsOf(["value-learned-late"]));
    writer.write("value-learned-late\n");
    expect(out).toEqual(["value-learned-late\n", "(sensitive)\n"]);
  });
});
