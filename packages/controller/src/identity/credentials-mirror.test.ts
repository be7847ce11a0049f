import { createHash } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import {
  credentialsHash,
  credentialsMirrorName,
  isCredentialsMirror,
  mirrorOwnersLimit,
  ownerReferencesWithUser,
  planMirror,
  planRevocation,
  type CredentialsUser,
} from "./credentials-mirror.js";

const user: CredentialsUser = { kind: "TerraformMachine", namespace: "team-a", name: "m-0", uid: "uid-2", identity: "aws" };
const data = {
  AWS_ACCESS_KEY_ID: Buffer.from("AKIA").toString("base64"),
  AWS_SECRET_ACCESS_KEY: Buffer.from("canary-7f3e").toString("base64"),
};
const userRef = { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "TerraformMachine", name: "m-0", uid: "uid-2" };
const otherRef = { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "TerraformCluster", name: "c", uid: "uid-c" };

function mirror(
  overrides: {
    data?: Record<string, string>;
    hash?: string;
    ownerReferences?: V1OwnerReference[];
    labels?: Record<string, string>;
    identity?: string;
  } = {},
): V1Secret {
  const secretData = overrides.data ?? data;
  return {
    metadata: {
      name: "captf-creds-aws",
      namespace: "team-a",
      resourceVersion: "7",
      labels: overrides.labels ?? { "captf.io/mirrored": "true", "captf.io/managed": "true" },
      annotations: {
        "captf.io/source-hash": overrides.hash ?? credentialsHash(secretData),
        "captf.io/identity": overrides.identity ?? "aws",
      },
      ownerReferences: overrides.ownerReferences ?? [userRef],
      managedFields: [{ manager: "captf" }],
    },
    type: "Opaque",
    data: secretData,
  };
}

describe("credentialsMirrorName", () => {
  it("is captf-creds-<identity>", () => {
    expect(credentialsMirrorName("aws")).toBe("captf-creds-aws");
    const longest = "a".repeat(253 - "captf-creds-".length);
    expect(credentialsMirrorName(longest)).toBe(`captf-creds-${longest}`);
  });

  it("uses the first 16 hex digits of the identity's SHA-256 when the name would pass 253 characters", () => {
    const identity = "a".repeat(242);
    const expected = `captf-creds-${createHash("sha256").update(identity).digest("hex").slice(0, 16)}`;
    expect(credentialsMirrorName(identity)).toBe(expected);
    expect(expected).toHaveLength(28);
  });
});

describe("credentialsHash", () => {
  it("is the SHA-256 of the data, whatever the key order, and changes with any value", () => {
    const reversed = Object.fromEntries(Object.entries(data).reverse());
    expect(credentialsHash(reversed)).toBe(credentialsHash(data));
    expect(credentialsHash(data)).toMatch(/^[0-9a-f]{64}$/);
    expect(credentialsHash({ ...data, AWS_SECRET_ACCESS_KEY: "cm90YXRlZA==" })).not.toBe(credentialsHash(data));
    expect(credentialsHash(undefined)).toBe(credentialsHash({}));
  });
});

describe("isCredentialsMirror", () => {
  it("needs both labels and the identity annotation", () => {
    expect(isCredentialsMirror(mirror(), "aws")).toBe(true);
    expect(isCredentialsMirror(mirror(), "gcp")).toBe(false);
    expect(isCredentialsMirror(mirror({ labels: { "captf.io/mirrored": "true" } }), "aws")).toBe(false);
    expect(isCredentialsMirror({ metadata: { name: "captf-creds-aws" } }, "aws")).toBe(false);
  });
});

describe("ownerReferencesWithUser", () => {
  it("adds one non-controller ref without blockOwnerDeletion and replaces one of an earlier object of the same name", () => {
    const earlier = { ...userRef, uid: "uid-1" };
    expect(ownerReferencesWithUser([otherRef, earlier], user)).toEqual([otherRef, userRef]);
    expect(ownerReferencesWithUser([], user)).toEqual([userRef]);
  });
});

describe("planMirror", () => {
  it("creates an Opaque copy with the labels, annotations and the user's ownerRef", () => {
    const plan = planMirror(undefined, data, user);
    expect(plan).toEqual({
      action: "create",
      secret: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name: "captf-creds-aws",
          namespace: "team-a",
          labels: { "captf.io/mirrored": "true", "captf.io/managed": "true" },
          annotations: { "captf.io/source-hash": credentialsHash(data), "captf.io/identity": "aws" },
          ownerReferences: [userRef],
        },
        type: "Opaque",
        data,
      },
    });
  });

  it("keeps a current mirror the user already owns", () => {
    expect(planMirror(mirror(), data, user)).toEqual({ action: "keep" });
  });

  it("rewrites the data when the source's hash differs (rotation)", () => {
    const rotated = { ...data, AWS_SECRET_ACCESS_KEY: Buffer.from("rotated").toString("base64") };
    const plan = planMirror(mirror(), rotated, user);
    expect(plan).toMatchObject({
      action: "replace",
      rewritesData: true,
      secret: { data: rotated, metadata: { resourceVersion: "7", annotations: { "captf.io/source-hash": credentialsHash(rotated) } } },
    });
    expect(plan.action === "replace" && plan.secret.metadata?.managedFields).toBeUndefined();
  });

  it("rewrites a mirror whose data was changed by hand though its annotation still matches", () => {
    const tampered = mirror({ data: { AWS_ACCESS_KEY_ID: "eA==" }, hash: credentialsHash(data) });
    expect(planMirror(tampered, data, user)).toMatchObject({ action: "replace", rewritesData: true, secret: { data } });
  });

  it("adds the ref of another user without touching the data", () => {
    const plan = planMirror(mirror({ ownerReferences: [otherRef] }), data, user);
    // A strategic merge patch of the one ref (merged by uid): users of one identity adding theirs at once never conflict.
    expect(plan).toEqual({ action: "addOwner", ownerReference: userRef, order: [otherRef.uid, userRef.uid] });
  });

  it("lists at most mirrorOwnersLimit users: another uses a full mirror without a write, and still gets its data rewritten", () => {
    const owners = Array.from({ length: mirrorOwnersLimit }, (_, i) => ({ ...otherRef, name: `c-${i}`, uid: `uid-c${i}` }));
    expect(planMirror(mirror({ ownerReferences: owners }), data, user)).toEqual({ action: "keep" });
    expect(planMirror(mirror({ ownerReferences: owners.slice(1) }), data, user)).toMatchObject({
      action: "addOwner",
      ownerReference: userRef,
    });
    const rotated = { ...data, AWS_SECRET_ACCESS_KEY: Buffer.from("rotated").toString("base64") };
    expect(planMirror(mirror({ ownerReferences: owners }), rotated, user)).toMatchObject({
      action: "replace",
      rewritesData: true,
      secret: { data: rotated, metadata: { ownerReferences: owners } },
    });
  });

  it("replaces the ref of an earlier object of the same name", () => {
    const plan = planMirror(mirror({ ownerReferences: [{ ...userRef, uid: "uid-1" }, otherRef] }), data, user);
    expect(plan).toMatchObject({ action: "replace", secret: { metadata: { ownerReferences: [otherRef, userRef] } } });
  });

  it("turns a controller or blocking ref of the user into a plain one", () => {
    const plan = planMirror(mirror({ ownerReferences: [{ ...userRef, controller: true, blockOwnerDeletion: true }] }), data, user);
    expect(plan).toMatchObject({ action: "replace", secret: { metadata: { ownerReferences: [userRef] } } });
  });

  it("never overwrites a Secret of that name that is not a captf mirror of this identity", () => {
    for (const existing of [
      mirror({ labels: {} }),
      mirror({ identity: "gcp" }),
      { metadata: { name: "captf-creds-aws", namespace: "team-a" }, data: { x: "eQ==" } },
    ]) {
      const plan = planMirror(existing, data, user);
      expect(plan).toEqual({
        action: "foreign",
        why: expect.stringContaining("Secret team-a/captf-creds-aws exists and is not a captf mirror of TerraformClusterIdentity aws"),
      });
    }
  });
});

describe("planRevocation", () => {
  it("deletes the mirror when the user was its last owner, with the read resourceVersion as precondition", () => {
    expect(planRevocation(mirror(), user)).toEqual({ action: "delete", resourceVersion: "7" });
    expect(planRevocation(mirror({ ownerReferences: [{ ...userRef, uid: "uid-1" }] }), user)).toEqual({
      action: "delete",
      resourceVersion: "7",
    });
    expect(planRevocation(mirror({ ownerReferences: [] }), user)).toEqual({ action: "delete", resourceVersion: "7" });
  });

  it("drops only the user's ref while others use it", () => {
    const plan = planRevocation(mirror({ ownerReferences: [otherRef, userRef] }), user);
    expect(plan).toMatchObject({ action: "replace", secret: { metadata: { ownerReferences: [otherRef] } } });
  });

  it("leaves a mirror the user does not own, a foreign Secret, and nothing alone", () => {
    expect(planRevocation(mirror({ ownerReferences: [otherRef] }), user)).toEqual({ action: "none" });
    expect(planRevocation(mirror({ labels: {} }), user)).toEqual({ action: "none" });
    expect(planRevocation(undefined, user)).toEqual({ action: "none" });
  });
});
