// Properties of the fuzzed-admission drill: TerraformCluster, TerraformMachine and
// TerraformMachinePool objects generated from their CRDs' OpenAPI schemas (rendered from the
// TypeBox schemas), pushed toward the edges (bounds ±1, values outside enums, missing required
// fields, reserved names, weakened security contexts), created with dryRun through the real
// API server, whose CRD validation runs before captf's webhooks.
//
// The oracle never asks captf's validators: the API server's own schema and CEL validation judge
// the schema, and captf's documented rules (docs/webhooks.md), restated here from the docs, judge
// the rest; image references are valid or invalid by construction. Per object: a schema-invalid one
// is refused by the API server with a field path; a schema-valid one is admitted exactly when the
// restated rules find nothing, and otherwise refused by the webhook naming every field they name;
// the webhook never fails (500, timeout, "failed calling webhook").

// ---- image references, valid or invalid by construction --------------------------------------

const imageTag = Symbol("image");
const hex = (fc, length) => fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: length, maxLength: length });

/** A reference the distribution grammar accepts: [domain/]path[:tag][@sha256:hex]. */
function validImage(fc) {
  const component = fc.stringMatching(/^[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*$/).filter((c) => c.length <= 30);
  // Without a domain, a first component that looks like a host would be read as one.
  const plainFirst = component.filter((c) => !c.includes(".") && c !== "localhost");
  const domain = fc.constantFrom(
    "ghcr.io",
    "registry.example.com:5000",
    "localhost",
    "localhost:5000",
    "[::1]:5000",
    "Registry.Example.COM",
    "a-b.c",
  );
  return fc
    .record({
      domain: fc.option(domain),
      path: fc.array(component, { minLength: 1, maxLength: 3 }),
      first: plainFirst,
      tag: fc.option(fc.oneof(fc.stringMatching(/^\w[\w.-]{0,127}$/), fc.constantFrom("v1", "latest", "_", "a".repeat(128)))),
      digest: fc.option(hex(fc, 64).map((h) => `sha256:${h}`)),
    })
    .map(({ domain, path, first, tag, digest }) => {
      const repository = domain ? [domain, ...path] : [first, ...path.slice(1)];
      const name = repository.join("/");
      return `${name}${tag ? `:${tag}` : ""}${digest ? `@${digest}` : ""}`;
    })
    .filter((image) => image.split(/[:@]/)[0].length <= 200 && !/^[a-f0-9]{64}$/.test(image));
}

/** References the grammar refuses, each for a documented reason. */
function invalidImage(fc) {
  return fc.oneof(
    fc.constantFrom(
      "ghcr.io/Team/module:v1",
      "ghcr.io/team/module:.v1",
      `ghcr.io/team/module:${"a".repeat(129)}`,
      `ghcr.io/team/module@sha256:${"a".repeat(63)}`,
      " ghcr.io/team/module:v1",
      "ghcr.io/team/module:v1 ",
      "ghcr.io//module:v1",
      "ghcr.io/team/module/",
      "a_b.example.com/team/module:v1",
      "ghcr.io/team/mod ule:v1",
      "ghcr.io/team/module:v1:v2",
      "ghcr.io/team/module@sha256",
      "ghcr.io/team/module@:abc",
      ":v1",
      "@sha256:" + "a".repeat(64),
      "a".repeat(64),
      `ghcr.io/${"a".repeat(252)}:v1`,
    ),
    hex(fc, 64),
  );
}

/** An image reference tagged with whether the grammar accepts it; a few are for the schema (length). */
function taggedImage(fc) {
  return fc.oneof(
    { weight: 12, arbitrary: validImage(fc).map((value) => ({ [imageTag]: true, value, valid: true })) },
    { weight: 3, arbitrary: invalidImage(fc).map((value) => ({ [imageTag]: true, value, valid: false })) },
    {
      weight: 1,
      arbitrary: fc.constantFrom("", `ghcr.io/${"a".repeat(520)}:v1`).map((value) => ({ [imageTag]: true, value, valid: false })),
    },
  );
}

// ---- the documented webhook rules, restated from docs/webhooks.md ------------------------------

const runnerEnvPrefixes = ["TF_", "KUBE_"];
const baselineSeLinuxTypes = ["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];
/** The Pod Security baseline's safe sysctls (Kubernetes docs). */
const safeSysctls = [
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
const moduleMetaArguments = ["source", "version", "providers", "count", "for_each", "depends_on", "lifecycle", "locals"];
const builtInLockTimeout = 300;
const builtInDeadline = 3600;

function securityViolations(path, context, pod) {
  if (!context || typeof context !== "object") return [];
  const found = [];
  if (context.runAsUser === 0) found.push(`${path}.runAsUser`);
  if (context.runAsNonRoot === false) found.push(`${path}.runAsNonRoot`);
  if (context.seccompProfile?.type === "Unconfined") found.push(`${path}.seccompProfile.type`);
  if (context.appArmorProfile?.type === "Unconfined") found.push(`${path}.appArmorProfile.type`);
  const seLinux = context.seLinuxOptions;
  if (seLinux?.type !== undefined && !baselineSeLinuxTypes.includes(seLinux.type)) found.push(`${path}.seLinuxOptions.type`);
  if (seLinux?.user) found.push(`${path}.seLinuxOptions.user`);
  if (seLinux?.role) found.push(`${path}.seLinuxOptions.role`);
  if (context.windowsOptions?.hostProcess === true) found.push(`${path}.windowsOptions.hostProcess`);
  if (pod) {
    (context.sysctls ?? []).forEach((sysctl, i) => safeSysctls.includes(sysctl.name) || found.push(`${path}.sysctls[${i}].name`));
  } else {
    if (context.privileged === true) found.push(`${path}.privileged`);
    if (context.allowPrivilegeEscalation === true) found.push(`${path}.allowPrivilegeEscalation`);
    if ((context.capabilities?.add ?? []).length > 0) found.push(`${path}.capabilities.add`);
    if (context.readOnlyRootFilesystem === false) found.push(`${path}.readOnlyRootFilesystem`);
    if (context.procMount === "Unmasked") found.push(`${path}.procMount`);
  }
  return found;
}

function jobsViolations(path, jobs) {
  if (!jobs || typeof jobs !== "object") return [];
  const found = [];
  const { lockTimeoutSeconds: lock, activeDeadlineSeconds: deadline } = jobs;
  if (lock !== undefined && deadline !== undefined) {
    if (lock >= deadline) found.push(`${path}.lockTimeoutSeconds`);
  } else if (deadline !== undefined && deadline <= builtInLockTimeout) found.push(`${path}.activeDeadlineSeconds`);
  else if (lock !== undefined && lock >= builtInDeadline) found.push(`${path}.lockTimeoutSeconds`);
  (jobs.env ?? []).forEach(
    (variable, i) => runnerEnvPrefixes.some((prefix) => variable.name?.startsWith(prefix)) && found.push(`${path}.env[${i}].name`),
  );
  found.push(...securityViolations(`${path}.securityContext`, jobs.securityContext, false));
  found.push(...securityViolations(`${path}.podSecurityContext`, jobs.podSecurityContext, true));
  return found;
}

const dnsSubdomain = (name) =>
  typeof name === "string" && name.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name);

/** The fields the documented rules refuse in a spec created by a user (not the manager); [] when none. */
export function documentedViolations(kind, spec, imageValid, contractInputs) {
  const found = [];
  if (!spec.source?.image || !imageValid) found.push("spec.source.image");
  found.push(...jobsViolations("spec.jobs", spec.jobs));
  const variables = spec.variables;
  if (variables !== undefined) {
    const names = variables && typeof variables === "object" && !Array.isArray(variables) ? Object.keys(variables) : null;
    const reserved = (name) =>
      !/^[a-zA-Z_][a-zA-Z0-9_-]*$/.test(name) ||
      name.startsWith("captf_") ||
      contractInputs.includes(name) ||
      moduleMetaArguments.includes(name);
    if (names === null || names.length > 256 || names.some(reserved)) found.push("spec.variables");
  }
  const sources = spec.variablesFrom ?? [];
  if (sources.length > 16) found.push("spec.variablesFrom");
  sources.forEach((source, i) => {
    const refs = [source.configMapRef, source.secretRef].filter(Boolean);
    if (refs.length !== 1 || refs.some((ref) => !dnsSubdomain(ref.name))) found.push(`spec.variablesFrom[${i}]`);
  });
  if (kind === "TerraformCluster") {
    found.push(...jobsViolations("spec.defaults.jobs", spec.defaults?.jobs));
    if (!spec.identityRef?.name) found.push("spec.identityRef.name");
    const endpoint = spec.controlPlaneEndpoint;
    if (endpoint && (endpoint.host === undefined) !== (endpoint.port === undefined)) found.push("spec.controlPlaneEndpoint");
  }
  return found;
}

// ---- objects from the CRD schema, pushed toward the edges ---------------------------------------

/** In an edgy object, a normal value most of the time and an edge one now and then; in a clean one, normal. */
const edgy = (fc, normal, edge, edges) => (edges ? fc.oneof({ weight: 30, arbitrary: normal }, { weight: 1, arbitrary: edge }) : normal);

/** Overrides by the end of a field's path (indices as []): where the documented rules look. */
function overrides(fc, contractInputs, edges) {
  const either = (normal, edge) => edgy(fc, normal, edge, edges);
  const variableName = either(
    fc.stringMatching(/^[a-z][a-z0-9_]{0,14}$/).map((name) => `v_${name}`),
    fc.constantFrom("captf_cluster_name", "captf_x", "1abc", "a.b", "a b", "-a", "", "ünï", ...moduleMetaArguments, ...contractInputs),
  );
  const variables = either(
    fc.dictionary(variableName, fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 5 }),
    fc.constantFrom(256, 257).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`v_${i}`, i]))),
  );
  return {
    "source.image": edges ? taggedImage(fc) : validImage(fc).map((value) => ({ [imageTag]: true, value, valid: true })),
    variables,
    "env[].name": either(
      fc.stringMatching(/^[A-Z][A-Z0-9_]{0,10}$/).filter((n) => !runnerEnvPrefixes.some((p) => n.startsWith(p))),
      fc.constantFrom("TF_LOG", "TF_", "KUBE_CONFIG_PATH", "KUBE_", "tf_log"),
    ),
    "seccompProfile.type": either(fc.constantFrom("RuntimeDefault", "Unconfined"), fc.constantFrom("Localhost", "Other")),
    "appArmorProfile.type": either(fc.constantFrom("RuntimeDefault", "Unconfined"), fc.constantFrom("Localhost", "Other")),
    "seLinuxOptions.type": fc.constantFrom(...baselineSeLinuxTypes, "spc_t", "unconfined_t"),
    "sysctls[].name": fc.constantFrom(...safeSysctls.slice(0, 3), "kernel.msgmax", "net.core.somaxconn"),
    procMount: either(fc.constantFrom("Default", "Unmasked"), fc.constant("Other")),
    runAsUser: either(fc.constantFrom(0, 1, 65532, 2 ** 31 - 1), fc.constant(-1)),
    activeDeadlineSeconds: either(fc.constantFrom(1, 299, 300, 301, 3600, 7200, 86400), fc.constantFrom(86401, 0)),
    lockTimeoutSeconds: either(fc.constantFrom(0, 1, 299, 300, 3599, 3600), fc.constant(3601)),
    // In a clean object at most one source per entry, as the schema's rule wants.
    "variablesFrom[]": edges
      ? undefined
      : fc
          .record({
            name: fc.stringMatching(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/).filter((n) => n.length <= 63),
            secret: fc.boolean(),
            optional: fc.option(fc.boolean(), { nil: undefined }),
          })
          .map(({ name, secret, optional }) => ({
            [secret ? "secretRef" : "configMapRef"]: { name },
            ...(optional === undefined ? {} : { optional }),
          })),
  };
}

/** The override for `path` (indices as []), if any: matched on its last one or two fields. */
function overrideFor(table, path) {
  const steps = path.split(".");
  return table[steps.slice(-2).join(".")] ?? table[steps.slice(-1)[0]] ?? undefined;
}

/** An arbitrary for `schema` (a structural OpenAPI v3 schema of a CRD) at `path`. */
function fromSchema(fc, schema, path, table, edges) {
  const either = (normal, edge) => edgy(fc, normal, edge, edges);
  const override = overrideFor(table, path);
  if (override) return override;
  if (schema.enum) return either(fc.constantFrom(...schema.enum), fc.constant("NotInTheEnum"));
  if (schema["x-kubernetes-int-or-string"])
    return either(fc.oneof(fc.nat(1000), fc.constantFrom("250m", "1Gi", "2", "0.5")), fc.constantFrom("lots", "-", "1GiB"));
  if (schema["x-kubernetes-preserve-unknown-fields"])
    return fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
  switch (schema.type) {
    case "string": {
      const min = schema.minLength ?? 0;
      const max = Math.min(schema.maxLength ?? 40, 40);
      const normal = schema.pattern
        ? fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= min && s.length <= (schema.maxLength ?? Infinity))
        : fc.string({ minLength: min, maxLength: Math.max(min, max) });
      const edgeValues = [
        min > 0 ? "a".repeat(min - 1) : undefined,
        schema.maxLength ? "a".repeat(schema.maxLength + 1) : undefined,
        schema.pattern ? "Not Valid!" : undefined,
      ].filter((e) => e !== undefined);
      return edgeValues.length ? either(normal, fc.constantFrom(...edgeValues)) : normal;
    }
    case "integer": {
      const min = schema.minimum ?? (schema.format === "int32" ? -(2 ** 31) : -(2 ** 53) + 1);
      const max = schema.maximum ?? (schema.format === "int32" ? 2 ** 31 - 1 : 2 ** 53 - 1);
      return either(fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max)), fc.constantFrom(min - 1, max + 1));
    }
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "array": {
      const item = fromSchema(fc, schema.items, `${path}[]`, table, edges);
      const minLength = schema.minItems ?? 0;
      const normal = fc.array(item, { minLength, maxLength: Math.max(minLength, Math.min(schema.maxItems ?? 3, 3)) });
      return schema.maxItems ? either(normal, fc.array(item, { minLength: schema.maxItems + 1, maxLength: schema.maxItems + 1 })) : normal;
    }
    case "object": {
      if (schema.properties) {
        const fields = Object.fromEntries(
          Object.entries(schema.properties).map(([key, field]) => [
            key,
            fromSchema(fc, field, path ? `${path}.${key}` : key, table, edges),
          ]),
        );
        const required = schema.required ?? [];
        const normal = fc.record(fields, { requiredKeys: required });
        // Now and then a required field is missing.
        return required.length
          ? either(
              normal,
              fc
                .tuple(normal, fc.constantFrom(...required))
                .map(([value, drop]) => Object.fromEntries(Object.entries(value).filter(([key]) => key !== drop))),
            )
          : normal;
      }
      if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
        return fc.dictionary(
          fc.stringMatching(/^[a-z][a-z.\/-]{0,12}$/),
          fromSchema(fc, schema.additionalProperties, `${path}{}`, table, edges),
          { maxKeys: 3 },
        );
      }
      return fc.constant({});
    }
  }
  return fc.constant(null);
}

/** The tagged image out of a generated spec: the spec as sent, and whether the image was valid. */
function untag(spec) {
  const image = spec.source?.image;
  if (!image || image[imageTag] !== true) return { spec, imageValid: true };
  return { spec: { ...spec, source: { ...spec.source, image: image.value } }, imageValid: image.valid };
}

/**
 * Objects of the three kinds with what the documented rules refuse in them. `kinds`: kind →
 * { role, specSchema (the CRD's openAPIV3Schema.properties.spec), contractInputs (input names) }.
 */
export function admissionObjects(fc, kinds) {
  // Half clean (values inside the schema's bounds), half edgy (each value now and then at or past an edge).
  const perKind = Object.entries(kinds).flatMap(([kind, { specSchema, contractInputs }]) =>
    [false, true].map((edges) =>
      fromSchema(fc, specSchema, "", overrides(fc, contractInputs, edges), edges).map((generated) => {
        const { spec, imageValid } = untag(generated);
        return { kind, spec, expected: documentedViolations(kind, spec, imageValid, contractInputs) };
      }),
    ),
  );
  return fc.oneof(...perKind);
}

/** The first spec field a message names, indices as []. */
const firstField = (message) => /\bspec[\w.[\]]*/.exec(message)?.[0].replace(/\[\d+\]/g, "[]");

/** Whether a message names a field of the spec ("spec.x", "spec[", "spec:"). */
const namesAField = (message) => /\bspec(\.|\[|:)/.test(message);

/**
 * How the chain answered one object, or a failure of the property. `answer`: { admitted: true }
 * or { code, message } of the API server's Status.
 */
export function judge({ kind, expected }, answer) {
  if (answer.admitted) {
    return expected.length === 0
      ? { verdict: "admitted (valid)" }
      : { failure: `${kind} admitted though the documented rules refuse ${expected.join(", ")}` };
  }
  const { code, message } = answer;
  if (code >= 500 || /failed calling webhook|validator failed|InternalError|context deadline exceeded/.test(message))
    return { failure: `${kind}: the webhook failed (${code}): ${message}` };
  if (!/admission webhook "[^"]+" denied the request/.test(message)) {
    return namesAField(message)
      ? { verdict: `refused by the schema (${code})`, field: firstField(message) }
      : { failure: `${kind} refused by the API server without a field path (${code}): ${message}` };
  }
  if (expected.length === 0) return { failure: `${kind} refused by the webhook though the documented rules find nothing: ${message}` };
  const unnamed = expected.filter((path) => !message.includes(path));
  if (unnamed.length > 0) return { failure: `${kind} refused by the webhook without naming ${unnamed.join(", ")}: ${message}` };
  return { verdict: `refused by the webhook (${code})` };
}

/**
 * The drill's property. `dryRunCreate(kind, object)` creates with dryRun through the API server
 * and resolves to { admitted: true } or { code, message }; `metadata` is the objects' metadata
 * (name, labels the webhook configuration selects on). `tally` counts kinds and verdicts.
 */
export function admissionProperty(fc, { kinds, dryRunCreate, apiVersion, metadata }, tally = new Map()) {
  const count = (key) => tally.set(key, (tally.get(key) ?? 0) + 1);
  return fc.asyncProperty(admissionObjects(fc, kinds), async (generated) => {
    const answer = await dryRunCreate(generated.kind, { apiVersion, kind: generated.kind, metadata, spec: generated.spec });
    const { verdict, failure, field } = judge(generated, answer);
    if (failure) throw new Error(failure);
    count(`${generated.kind} ${verdict}`);
    if (field) count(`schema refusals at ${field}`);
  });
}
