/**
 * The watches of identities' source Secrets (any namespace, no label: a watch of each, by name):
 * the first read of a Secret an identity names starts its watch; once no identity names it (the
 * identity deleted, or its spec.secretRef changed), the watch stops. A Secret no cached identity
 * names is read live, so a pass that read an identity just before it changed starts no watch that
 * nothing would stop.
 */
import type { TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeObject } from "../runtime/kube-client.js";
import type { Manager } from "../runtime/manager.js";
import type { ObjectWatch } from "../runtime/read-cache.js";
import { identityResourceType } from "./ensure-credentials.js";

/** The identity cache's index by the `namespace/name` of the Secret each identity names. */
export const identitySecretIndex = "identity-secret";

/** The `namespace/name` of the Secret an identity names (none without a secretRef). Pure. */
export function identitySecretKeys(identity: KubeObject): string[] {
  const ref = (identity as Partial<TerraformClusterIdentity>).spec?.secretRef;
  return ref?.name ? [`${ref.namespace ?? ""}/${ref.name}`] : [];
}

/** The manager's parts the watches use; without object watches there are none (every read is live). */
export type SecretWatchSource = Pick<Manager, "informer"> & Partial<Pick<Manager, "objectWatch" | "releaseObjectWatch">>;

/**
 * Indexes the identity cache (call before the manager starts) and gives the reads of identities'
 * Secrets their watches, while an identity names them; undefined when the manager has no object watches.
 */
export function identitySecretWatches(manager: SecretWatchSource, transform?: (secret: KubeObject) => KubeObject): ObjectWatch | undefined {
  if (!manager.objectWatch || !manager.releaseObjectWatch) return undefined;
  const watch = manager.objectWatch.bind(manager);
  const release = manager.releaseObjectWatch.bind(manager);
  const identities = manager.informer(identityResourceType, { indexes: { [identitySecretIndex]: identitySecretKeys } });
  const named = (key: string) => identities.byIndex(identitySecretIndex, key).length > 0;
  // The cache's index already shows the change when its handlers run: a Secret still named by any identity keeps its watch.
  const releaseUnnamed = (identity: KubeObject) => {
    for (const key of identitySecretKeys(identity)) {
      if (named(key)) continue;
      const slash = key.indexOf("/");
      release(builtinTypes.secret, key.slice(0, slash) || undefined, key.slice(slash + 1));
    }
  };
  identities.addHandlers({ update: (before) => releaseUnnamed(before), delete: releaseUnnamed });
  return (namespace, name) => (named(`${namespace ?? ""}/${name}`) ? watch(builtinTypes.secret, namespace, name, transform) : undefined);
}
