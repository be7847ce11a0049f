import { describe, expect, it } from "@jest/globals";
import { fullJobPolicy } from "../api/examples.test-support.js";
import type { JobPolicy } from "../api/workspace.js";
import { jobPolicyProblems, mergedDeadlineProblem } from "./job-policy.js";

describe("jobPolicyProblems", () => {
  it("accepts a hardened policy touching every field, and no policy", () => {
    expect(jobPolicyProblems("spec.jobs", fullJobPolicy())).toEqual([]);
    expect(jobPolicyProblems("spec.jobs", undefined)).toEqual([]);
  });

  it.each<[string, JobPolicy]>([
    ["a lock timeout below the deadline", { lockTimeoutSeconds: 299, activeDeadlineSeconds: 300 }],
    ["a lone deadline above the built-in lock timeout", { activeDeadlineSeconds: 301 }],
    ["a lone lock timeout below the built-in deadline", { lockTimeoutSeconds: 3599 }],
    ["a lock timeout of 0", { lockTimeoutSeconds: 0 }],
    [
      "hardening settings spelled out",
      {
        securityContext: {
          privileged: false,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { add: [] },
        },
      },
    ],
    [
      "a Localhost seccomp profile and the default SELinux type",
      { podSecurityContext: { seccompProfile: { type: "Localhost", localhostProfile: "p.json" }, seLinuxOptions: { type: "" } } },
    ],
    [
      "env names that only contain TF_",
      {
        env: [
          { name: "MY_TF_SETTING", value: "x" },
          { name: "kube_lower", value: "y" },
        ],
      },
    ],
  ])("accepts %s", (_name, policy) => {
    expect(jobPolicyProblems("spec.jobs", policy)).toEqual([]);
  });

  it.each<[string, JobPolicy, string]>([
    [
      "a lock timeout equal to the deadline",
      { lockTimeoutSeconds: 600, activeDeadlineSeconds: 600 },
      "spec.jobs.lockTimeoutSeconds: 600 must be less than spec.jobs.activeDeadlineSeconds (600)",
    ],
    [
      "a lone deadline at the built-in lock timeout",
      { activeDeadlineSeconds: 300 },
      "spec.jobs.activeDeadlineSeconds: 300 must exceed the built-in lock timeout of 300 seconds",
    ],
    [
      "a lone lock timeout at the built-in deadline",
      { lockTimeoutSeconds: 3600 },
      "spec.jobs.lockTimeoutSeconds: 3600 must be less than the built-in deadline of 3600 seconds",
    ],
    [
      "TF_LOG in env",
      { env: [{ name: "TF_LOG", value: "DEBUG" }] },
      'spec.jobs.env[0].name: "TF_LOG" is reserved: the runner owns every TF_* variable',
    ],
    [
      "KUBE_ in env",
      {
        env: [
          { name: "A", value: "1" },
          { name: "KUBE_NAMESPACE", value: "x" },
        ],
      },
      'spec.jobs.env[1].name: "KUBE_NAMESPACE" is reserved: the runner owns every KUBE_* variable',
    ],
    ["a privileged container", { securityContext: { privileged: true } }, "spec.jobs.securityContext.privileged: true is not allowed"],
    [
      "privilege escalation",
      { securityContext: { allowPrivilegeEscalation: true } },
      "spec.jobs.securityContext.allowPrivilegeEscalation: true is not allowed",
    ],
    [
      "an added capability",
      { securityContext: { capabilities: { add: ["NET_ADMIN"] } } },
      "spec.jobs.securityContext.capabilities.add: adding capabilities is not allowed; remove NET_ADMIN",
    ],
    [
      "a writable root filesystem",
      { securityContext: { readOnlyRootFilesystem: false } },
      "spec.jobs.securityContext.readOnlyRootFilesystem: false is not allowed",
    ],
    ["an unmasked /proc", { securityContext: { procMount: "Unmasked" } }, "spec.jobs.securityContext.procMount: Unmasked is not allowed"],
    ["root in the container", { securityContext: { runAsUser: 0 } }, "spec.jobs.securityContext.runAsUser: 0 runs as root"],
    [
      "runAsNonRoot false in the pod",
      { podSecurityContext: { runAsNonRoot: false } },
      "spec.jobs.podSecurityContext.runAsNonRoot: false is not allowed",
    ],
    ["root in the pod", { podSecurityContext: { runAsUser: 0 } }, "spec.jobs.podSecurityContext.runAsUser: 0 runs as root"],
    [
      "an unconfined seccomp profile",
      { podSecurityContext: { seccompProfile: { type: "Unconfined" } } },
      "spec.jobs.podSecurityContext.seccompProfile.type: Unconfined is not allowed",
    ],
    [
      "an unconfined AppArmor profile",
      { securityContext: { appArmorProfile: { type: "Unconfined" } } },
      "spec.jobs.securityContext.appArmorProfile.type: Unconfined is not allowed",
    ],
    [
      "an SELinux type outside the baseline",
      { securityContext: { seLinuxOptions: { type: "spc_t" } } },
      'spec.jobs.securityContext.seLinuxOptions.type: "spc_t" is not allowed',
    ],
    [
      "an SELinux user",
      { podSecurityContext: { seLinuxOptions: { user: "system_u" } } },
      "spec.jobs.podSecurityContext.seLinuxOptions.user: setting an SELinux user is not allowed",
    ],
    [
      "an SELinux role",
      { securityContext: { seLinuxOptions: { role: "r" } } },
      "spec.jobs.securityContext.seLinuxOptions.role: setting an SELinux role is not allowed",
    ],
    [
      "a Windows host process",
      { securityContext: { windowsOptions: { hostProcess: true } } },
      "spec.jobs.securityContext.windowsOptions.hostProcess: true is not allowed",
    ],
    [
      "an unsafe sysctl",
      { podSecurityContext: { sysctls: [{ name: "kernel.msgmax", value: "1" }] } },
      'spec.jobs.podSecurityContext.sysctls[0].name: "kernel.msgmax" is outside the Pod Security safe set',
    ],
  ])("refuses %s", (_name, policy, problem) => {
    expect(jobPolicyProblems("spec.jobs", policy)).toEqual([expect.stringContaining(problem)]);
  });

  it("reports every problem of one policy at once", () => {
    const problems = jobPolicyProblems("spec.defaults.jobs", {
      lockTimeoutSeconds: 900,
      activeDeadlineSeconds: 600,
      env: [{ name: "TF_X" }],
      securityContext: { privileged: true, runAsUser: 0 },
    });
    expect(problems).toHaveLength(4);
    expect(problems.every((problem) => problem.startsWith("spec.defaults.jobs."))).toBe(true);
  });
});

describe("mergedDeadlineProblem", () => {
  it("accepts a lock timeout below the deadline, each configured or built-in", () => {
    expect(mergedDeadlineProblem({})).toBeUndefined();
    expect(mergedDeadlineProblem({ lockTimeoutSeconds: 600, activeDeadlineSeconds: 601 })).toBeUndefined();
  });
  it("names both effective values and where each comes from", () => {
    expect(mergedDeadlineProblem({ lockTimeoutSeconds: 600, activeDeadlineSeconds: 500 })).toContain(
      "lockTimeoutSeconds 600 (configured) must be less than the effective activeDeadlineSeconds 500 (configured)",
    );
    expect(mergedDeadlineProblem({ activeDeadlineSeconds: 300 })).toContain(
      "lockTimeoutSeconds 300 (built-in) must be less than the effective activeDeadlineSeconds 300 (configured)",
    );
    expect(mergedDeadlineProblem({ lockTimeoutSeconds: 3600 })).toContain("activeDeadlineSeconds 3600 (built-in)");
  });
});
