/**
 * Rules on one JobPolicy (spec.jobs, spec.defaults.jobs) the schema cannot express: the lock
 * timeout against the built-in deadline and the reverse, the runner-owned environment names,
 * and security contexts that must not weaken the Job's hardening (its container holds cloud
 * credentials). A merge of a machine's policy with its cluster's defaults is checked at
 * reconcile (JobPolicyInvalid), not here: the webhook sees one object.
 */
import { jobPolicyDefaults } from "../api/defaults.js";
import type { PodSecurityContext, SecurityContext } from "../api/kubernetes-types.js";
import { reservedEnvPrefixes, type JobPolicy } from "../api/workspace.js";

/** SELinux types the baseline Pod Security profile allows (empty means the runtime's default). */
export const allowedSeLinuxTypes: readonly string[] = ["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

/** Sysctls the baseline Pod Security profile allows a pod to set. */
export const safeSysctls: readonly string[] = [
  "kernel.shm_rmid_forced",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.ping_group_range",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
];

/** Every problem of one policy at `path`, each naming the field and the fix. */
export function jobPolicyProblems(path: string, policy: JobPolicy | undefined): string[] {
  if (!policy) return [];
  return [
    ...deadlineProblems(path, policy),
    ...envProblems(path, policy),
    ...securityContextProblems(`${path}.securityContext`, policy.securityContext),
    ...podSecurityContextProblems(`${path}.podSecurityContext`, policy.podSecurityContext),
  ];
}

function deadlineProblems(path: string, { lockTimeoutSeconds: lock, activeDeadlineSeconds: deadline }: JobPolicy): string[] {
  if (lock !== undefined && deadline !== undefined) {
    return lock < deadline
      ? []
      : [
          `${path}.lockTimeoutSeconds: ${lock} must be less than ${path}.activeDeadlineSeconds (${deadline}), or the Job ends ` +
            `while it still waits for the state lock; lower the lock timeout or raise the deadline`,
        ];
  }
  if (deadline !== undefined && deadline <= jobPolicyDefaults.lockTimeoutSeconds) {
    return [
      `${path}.activeDeadlineSeconds: ${deadline} must exceed the built-in lock timeout of ` +
        `${jobPolicyDefaults.lockTimeoutSeconds} seconds; raise it or also set a lower lockTimeoutSeconds`,
    ];
  }
  if (lock !== undefined && lock >= jobPolicyDefaults.activeDeadlineSeconds) {
    return [
      `${path}.lockTimeoutSeconds: ${lock} must be less than the built-in deadline of ` +
        `${jobPolicyDefaults.activeDeadlineSeconds} seconds; lower it or also set a higher activeDeadlineSeconds`,
    ];
  }
  return [];
}

/**
 * The merged policy a Job would run with (a machine's or pool's own over its cluster's defaults): its
 * lock timeout against its deadline, each configured or built-in. Undefined when consistent. Pure.
 */
export function mergedDeadlineProblem(policy: Pick<JobPolicy, "lockTimeoutSeconds" | "activeDeadlineSeconds">): string | undefined {
  const lock = policy.lockTimeoutSeconds ?? jobPolicyDefaults.lockTimeoutSeconds;
  const deadline = policy.activeDeadlineSeconds ?? jobPolicyDefaults.activeDeadlineSeconds;
  if (lock < deadline) return undefined;
  const origin = (value: number | undefined) => (value === undefined ? "built-in" : "configured");
  return (
    `the effective lockTimeoutSeconds ${lock} (${origin(policy.lockTimeoutSeconds)}) must be less than the effective ` +
    `activeDeadlineSeconds ${deadline} (${origin(policy.activeDeadlineSeconds)}), or the Job ends while it still waits for the ` +
    `state lock: lower the lock timeout or raise the deadline (spec.jobs, or the cluster's spec.defaults.jobs)`
  );
}

function envProblems(path: string, policy: JobPolicy): string[] {
  return (policy.env ?? []).flatMap((variable, index) => {
    const prefix = reservedEnvPrefixes.find((candidate) => variable.name.startsWith(candidate));
    return prefix
      ? [
          `${path}.env[${index}].name: ${JSON.stringify(variable.name)} is reserved: the runner owns every ${prefix}* variable ` +
            `(runtime and state backend settings); remove it, and bake settings such as a provider mirror into the image instead`,
        ]
      : [];
  });
}

type SharedSecurityFields = Pick<
  SecurityContext,
  "runAsUser" | "runAsNonRoot" | "seccompProfile" | "appArmorProfile" | "seLinuxOptions" | "windowsOptions"
>;

/** Rules the container and the pod security context share. */
function sharedSecurityProblems(path: string, context: SharedSecurityFields): string[] {
  const problems: string[] = [];
  if (context.runAsUser === 0) problems.push(`${path}.runAsUser: 0 runs as root; use a non-zero UID or leave it unset`);
  if (context.runAsNonRoot === false) problems.push(`${path}.runAsNonRoot: false is not allowed; set true or leave it unset`);
  if (context.seccompProfile?.type === "Unconfined")
    problems.push(`${path}.seccompProfile.type: Unconfined is not allowed; use RuntimeDefault or Localhost`);
  if (context.appArmorProfile?.type === "Unconfined")
    problems.push(`${path}.appArmorProfile.type: Unconfined is not allowed; use RuntimeDefault or Localhost`);
  const seLinux = context.seLinuxOptions;
  if (seLinux?.type !== undefined && !allowedSeLinuxTypes.includes(seLinux.type)) {
    problems.push(
      `${path}.seLinuxOptions.type: ${JSON.stringify(seLinux.type)} is not allowed; use one of ` +
        `${allowedSeLinuxTypes.filter(Boolean).join(", ")} or leave it unset`,
    );
  }
  if (seLinux?.user) problems.push(`${path}.seLinuxOptions.user: setting an SELinux user is not allowed; remove it`);
  if (seLinux?.role) problems.push(`${path}.seLinuxOptions.role: setting an SELinux role is not allowed; remove it`);
  if (context.windowsOptions?.hostProcess === true) problems.push(`${path}.windowsOptions.hostProcess: true is not allowed; remove it`);
  return problems;
}

export function securityContextProblems(path: string, context: SecurityContext | undefined): string[] {
  if (!context) return [];
  const problems = sharedSecurityProblems(path, context);
  if (context.privileged === true)
    problems.push(`${path}.privileged: true is not allowed: the container holds cloud credentials; remove it`);
  if (context.allowPrivilegeEscalation === true)
    problems.push(`${path}.allowPrivilegeEscalation: true is not allowed; set false or leave it unset`);
  if ((context.capabilities?.add ?? []).length > 0)
    problems.push(`${path}.capabilities.add: adding capabilities is not allowed; remove ${context.capabilities!.add!.join(", ")}`);
  if (context.readOnlyRootFilesystem === false)
    problems.push(`${path}.readOnlyRootFilesystem: false is not allowed; write to /tmp or the work volume instead, and leave it unset`);
  if (context.procMount === "Unmasked") problems.push(`${path}.procMount: Unmasked is not allowed; use Default or leave it unset`);
  return problems;
}

export function podSecurityContextProblems(path: string, context: PodSecurityContext | undefined): string[] {
  if (!context) return [];
  const problems = sharedSecurityProblems(path, context);
  for (const [index, sysctl] of (context.sysctls ?? []).entries()) {
    if (!safeSysctls.includes(sysctl.name))
      problems.push(`${path}.sysctls[${index}].name: ${JSON.stringify(sysctl.name)} is outside the Pod Security safe set; remove it`);
  }
  return problems;
}
