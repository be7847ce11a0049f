/**
 * The manager's signature check of a module image before a Job runs it: the TerraformModulePolicies, the namespace's labels
 * and the keys are read live each time (a key added, a policy changed or a signature pushed counts at the next pass, without
 * a restart), the image's tag is resolved to its digest anew (a re-pushed tag is verified as the new digest it is), and
 * the signatures are read from the registry with the Job's imagePullSecrets.
 */
import type { V1Namespace, V1Secret } from "@kubernetes/client-node";
import { ImageReferenceError, parseRegistryReference, RegistrySource, type Fetched } from "@captf/contract/oci";
import { readPublicKey, verifyImageSignature, type TrustedKey } from "@captf/contract/signatures";
import { resourceTypeOf } from "../api/resource.js";
import { terraformModulePolicyDefinition } from "../api/terraformmodulepolicy.js";
import { isNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import { pullSecretCredentials } from "../templates/inspect-image.js";
import {
  keysUnusable,
  notAllowed,
  policyName,
  selectPolicies,
  verificationOf,
  type ImageVerification,
  type ModulePolicy,
} from "./module-policy.js";

export const modulePolicyType = resourceTypeOf(terraformModulePolicyDefinition);

export interface ImageVerificationRequest {
  namespace: string;
  /** The reference the Job would run: a tag, or a digest already pinned. */
  image: string;
  /** The Job's imagePullSecrets in `namespace`: the registry credentials for the signatures too. */
  pullSecrets: readonly string[];
}

export interface ImageVerifier {
  verify(request: ImageVerificationRequest): Promise<ImageVerification>;
}

export interface ImageVerifierOptions {
  client: Pick<KubeApi, "get" | "list">;
  /** Registry requests time out after this long (default 30 s). */
  timeoutMs?: number;
}

/** The keys of a policy's authorities that read as public keys, and why the others do not. */
export async function policyKeys(client: Pick<KubeApi, "get">, policy: ModulePolicy): Promise<{ keys: TrustedKey[]; problems: string[] }> {
  const keys: TrustedKey[] = [];
  const problems: string[] = [];
  for (const authority of policy.spec.authorities) {
    const key = authority.key;
    if (!key) continue;
    let pem = key.data;
    if (key.secretRef) {
      const { namespace, name } = key.secretRef;
      const dataKey = key.secretRef.key ?? "cosign.pub";
      const secret = await client.get<V1Secret>(builtinTypes.secret, namespace, name).catch(ifNotFound(undefined));
      const data = secret?.data?.[dataKey];
      if (data === undefined) {
        problems.push(`${authority.name}: Secret ${namespace}/${name} ${secret ? `has no key ${dataKey}` : "is not found"}`);
        continue;
      }
      pem = Buffer.from(data, "base64").toString("utf8");
    }
    const reading = readPublicKey(pem ?? "", authority.name);
    if (reading.key) keys.push(reading.key);
    else problems.push(`${authority.name}: ${reading.problem}`);
  }
  return { keys, problems };
}

function ifNotFound<T>(value: T): (error: unknown) => T {
  return (error) => {
    if (isNotFound(error)) return value;
    throw error;
  };
}

/** The verifier on the live API: policies, namespace, key Secrets and pull Secrets read at each call. */
export function policyImageVerifier(options: ImageVerifierOptions): ImageVerifier {
  const { client } = options;
  return {
    async verify(request) {
      // No TerraformModulePolicy CRD installed: no policy can govern anything.
      const policies = (await client.list<ModulePolicy>(modulePolicyType, undefined).catch(ifNotFound({ items: [] }))).items;
      if (policies.length === 0) return { kind: "ungoverned" };
      const namespace = await client.get<V1Namespace>(builtinTypes.namespace, undefined, request.namespace);
      const selection = selectPolicies(policies, namespace.metadata?.labels, request.image);
      if (selection.kind === "ungoverned") return selection;
      if (selection.kind === "not-allowed") return notAllowed(request.image, selection.governing);
      let reference;
      try {
        reference = parseRegistryReference(request.image);
      } catch (error) {
        if (!(error instanceof ImageReferenceError)) throw error;
        return verificationOf(request.image, policyName(selection.policies[0]!), {
          kind: "unreachable",
          digest: undefined,
          problem: error.message,
        });
      }
      const secrets = await Promise.all(
        request.pullSecrets.map((name) => client.get<V1Secret>(builtinTypes.secret, request.namespace, name).catch(() => undefined)),
      );
      const source = new RegistrySource(reference, {
        insecure: false,
        credentials: pullSecretCredentials(
          secrets.filter((secret): secret is V1Secret => secret !== undefined),
          reference.registry,
        ),
        credentialsOrigin: "the Job's imagePullSecrets",
        timeoutMs: options.timeoutMs ?? 30_000,
      });
      // One resolution of the tag for every policy: all of them judge the same digest.
      let root: Promise<Fetched> | undefined;
      const resolveRoot = () => (root ??= source.root());
      let verified: ImageVerification | undefined;
      for (const policy of selection.policies) {
        const name = policyName(policy);
        const { keys, problems } = await policyKeys(client, policy);
        if (keys.length === 0) return keysUnusable(name, problems);
        const verification = verificationOf(request.image, name, await verifyImageSignature(source, resolveRoot, keys));
        if (verification.kind !== "verified") return verification;
        verified ??= verification;
      }
      return verified!;
    },
  };
}
