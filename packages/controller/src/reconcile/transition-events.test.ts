import { describe, expect, it } from "@jest/globals";
import { publishedExports } from "../kinds/adapters.js";
import { jobStartEvents, resourceChanges, transitionEvents, type StatusView } from "./transition-events.js";

type C = { type: string; status: "True" | "False" | "Unknown"; reason: string };
const c = (type: string, status: C["status"], reason: string): C => ({ type, status, reason });
const facts = { kind: "TerraformMachine" };
/** The events of one pass from conditions `before` to conditions `after`. */
const between = (before: C[] | undefined, after: C[], extra: Partial<StatusView> = {}) =>
  transitionEvents({ ...(before ? { conditions: before } : {}) }, { conditions: after, ...extra }, facts).map(
    ({ reason, type }) => `${type} ${reason}`,
  );

describe("transitionEvents", () => {
  const healthy = c("InfrastructureHealthy", "True", "Healthy");

  it("records nothing when nothing changed, and nothing on a second identical pass", () => {
    const status = [healthy, c("OutputsValid", "False", "OutputsInvalid"), c("DependenciesReady", "False", "OwnerNotFound")];
    expect(between(status, status)).toEqual([]);
    const second = transitionEvents(
      { conditions: status, failureDomains: [{ name: "a" }], observedStateSerial: 4 },
      { conditions: status, failureDomains: [{ name: "a" }], observedStateSerial: 4 },
      { ...facts, exportsNotPublished: { bytes: 70_000, limit: 65_536 } },
    );
    expect(second).toEqual([]);
  });

  it(
    "InstanceUnhealthy when InfrastructureHealthy turns False for an instance's unhealthy reasons; InstanceHealthy when it is " +
      "Healthy again",
    () => {
      for (const reason of ["InstanceUnhealthy", "InstanceDegraded", "InstanceStopped", "InstanceTerminated"]) {
        expect(between([healthy], [c("InfrastructureHealthy", "False", reason)])).toEqual(["Warning InstanceUnhealthy"]);
        expect(between([c("InfrastructureHealthy", "False", reason)], [healthy])).toEqual(["Normal InstanceHealthy"]);
      }
      // Another unhealthy reason is another transition.
      expect(
        between([c("InfrastructureHealthy", "False", "InstanceDegraded")], [c("InfrastructureHealthy", "False", "InstanceStopped")]),
      ).toEqual(["Warning InstanceUnhealthy"]);
    },
  );

  it("StateUnreadable once when the state turns unreadable (or unreadable for another reason), not a generic ConditionChanged", () => {
    const read = c("StateReadable", "True", "StateRead");
    for (const reason of ["StateCorrupt", "StateEncrypted", "StateInconsistent", "StateTooLarge"]) {
      expect(between([read], [c("StateReadable", "False", reason)])).toEqual(["Warning StateUnreadable"]);
      expect(between([c("StateReadable", "False", reason)], [c("StateReadable", "False", reason)])).toEqual([]);
    }
    expect(between([c("StateReadable", "False", "StateCorrupt")], [c("StateReadable", "False", "StateEncrypted")])).toEqual([
      "Warning StateUnreadable",
    ]);
    // Its recovery is generic; a lost or locked state has its own events.
    expect(between([c("StateReadable", "False", "StateCorrupt")], [read])).toEqual(["Normal ConditionChanged"]);
    expect(between([read], [c("StateReadable", "False", "StateLost")])).toEqual([]);
  });

  it("no health event while provisioning, pending or unknown, and none for the first Healthy (Provisioned says it)", () => {
    expect(between(undefined, [c("InfrastructureHealthy", "Unknown", "WaitingForProvisioning")])).toEqual([]);
    expect(
      between([c("InfrastructureHealthy", "Unknown", "WaitingForProvisioning")], [c("InfrastructureHealthy", "False", "Provisioning")]),
    ).toEqual([]);
    expect(between([c("InfrastructureHealthy", "False", "Provisioning")], [healthy])).toEqual([]);
    expect(between([healthy], [c("InfrastructureHealthy", "False", "InstancePending")])).toEqual([]);
    expect(between([healthy], [c("InfrastructureHealthy", "Unknown", "HealthUnknown")])).toEqual([]);
  });

  it("OutputsInvalid once when OutputsValid turns False, with the reason for the metric; its recovery is a Normal ConditionChanged", () => {
    const events = transitionEvents(
      { conditions: [c("OutputsValid", "True", "OutputsValid")] },
      { conditions: [c("OutputsValid", "False", "OutputsInvalid")] },
      facts,
    );
    expect(events).toEqual([
      { reason: "OutputsInvalid", type: "Warning", note: expect.stringContaining("(OutputsInvalid)"), cause: "OutputsInvalid" },
    ]);
    expect(between(undefined, [c("OutputsValid", "False", "OutputsMissing")])).toEqual(["Warning OutputsInvalid"]);
    expect(between([c("OutputsValid", "False", "OutputsMissing")], [c("OutputsValid", "False", "ProviderIDChanged")])).toEqual([
      "Warning OutputsInvalid",
    ]);
    expect(between([c("OutputsValid", "False", "OutputsInvalid")], [c("OutputsValid", "True", "OutputsValid")])).toEqual([
      "Normal ConditionChanged",
    ]);
    expect(between([c("OutputsValid", "Unknown", "OutputsPending")], [c("OutputsValid", "True", "OutputsValid")])).toEqual([]);
  });

  it("ConditionChanged: Warning when a condition without its own event turns bad (or appears bad), Normal when it recovers", () => {
    expect(between(undefined, [c("DependenciesReady", "False", "OwnerNotFound")])).toEqual(["Warning ConditionChanged"]);
    expect(between(undefined, [c("DependenciesReady", "Unknown", "WaitingForOwner")])).toEqual([]);
    expect(between([c("DependenciesReady", "False", "OwnerNotFound")], [c("DependenciesReady", "False", "OwnerMismatch")])).toEqual([
      "Warning ConditionChanged",
    ]);
    expect(between([c("DependenciesReady", "False", "OwnerNotFound")], [c("DependenciesReady", "True", "DependenciesReady")])).toEqual([
      "Normal ConditionChanged",
    ]);
    expect(between([c("RunnerRBACReady", "True", "RBACReady")], [c("RunnerRBACReady", "False", "ServiceAccountNotOptedIn")])).toEqual([
      "Warning ConditionChanged",
    ]);
    expect(between([c("ApplyJobSucceeded", "Unknown", "NoApplyYet")], [c("ApplyJobSucceeded", "False", "InputsTooLarge")])).toEqual([
      "Warning ConditionChanged",
    ]);
    // Negative polarity: True is the bad state.
    expect(between(undefined, [c("DeletionBlocked", "True", "DependentsExist")])).toEqual(["Warning ConditionChanged"]);
    expect(between([c("DeletionBlocked", "True", "DependentsExist")], [c("DeletionBlocked", "False", "NotBlocked")])).toEqual([
      "Normal ConditionChanged",
    ]);
    // A choice, not a fault.
    expect(between(undefined, [c("AutoscalingActive", "False", "AutoscalingDisabled")])).toEqual([]);
  });

  it(
    "no ConditionChanged where a transition has its own event (Ready's are ReadyLost/ReadyRegained), nor for InputsApplied " +
      "or recoveries JobSucceeded reports",
    () => {
      expect(between([c("ApplyJobSucceeded", "True", "ApplySucceeded")], [c("ApplyJobSucceeded", "False", "ApplyFailed")])).toEqual([]);
      expect(between([c("ApplyJobSucceeded", "False", "ApplyFailed")], [c("ApplyJobSucceeded", "True", "ApplySucceeded")])).toEqual([]);
      expect(between([c("StateReadable", "True", "StateRead")], [c("StateReadable", "False", "StateLocked")])).toEqual([]);
      expect(between([c("DriftJobSucceeded", "True", "DriftChecked")], [c("DriftJobSucceeded", "False", "DriftJobFailed")])).toEqual([]);
      expect(
        between(
          [c("AutoscalingActive", "True", "ReplicasManagedByModule")],
          [c("AutoscalingActive", "False", "ReplicasManagedExternally")],
        ),
      ).toEqual([]);
      expect(between([c("Ready", "True", "Ready")], [c("Ready", "False", "NotReady")])).toEqual(["Warning ReadyLost"]);
      expect(between([c("Paused", "False", "NotPaused")], [c("Paused", "True", "Paused")])).toEqual([]);
      expect(between([c("IdentityAllowed", "True", "IdentityAllowed")], [c("IdentityAllowed", "False", "IdentityNotFound")])).toEqual([]);
      expect(between([c("InputsApplied", "True", "InputsApplied")], [c("InputsApplied", "False", "InputsApplyFailed")])).toEqual([]);
      // A recovery from a bad reason that had its own event is still news when nothing else reports it.
      expect(between([c("StateReadable", "False", "StateLocked")], [c("StateReadable", "True", "StateRead")])).toEqual([
        "Normal ConditionChanged",
      ]);
    },
  );

  it("ReadyLost when Ready leaves True (not while deleting); ReadyRegained when it returns once provisioned, not the first Ready", () => {
    const ready = c("Ready", "True", "Ready");
    const notReady = c("Ready", "False", "NotReady");
    expect(between([ready], [c("Ready", "Unknown", "ReadyUnknown")])).toEqual(["Warning ReadyLost"]);
    expect(between([ready], [notReady, c("Deleting", "True", "Deleting")])).toEqual([]);
    expect(between([notReady], [ready], { initialization: { provisioned: true } })).toEqual([]);
    const provisioned = { conditions: [notReady], initialization: { provisioned: true } };
    expect(transitionEvents(provisioned, { conditions: [ready] }, facts).map((event) => event.reason)).toEqual(["ReadyRegained"]);
    // The first Ready of a new object, or a Ready that stays, is no news.
    expect(transitionEvents({}, { conditions: [ready] }, facts)).toEqual([]);
    expect(transitionEvents({ conditions: [ready], initialization: { provisioned: true } }, { conditions: [ready] }, facts)).toEqual([]);
    expect(between([notReady], [c("Ready", "Unknown", "ReadyUnknown")])).toEqual([]);
  });

  it("a pass that leaves out the conditions (a merge patch keeps them) changes nothing", () => {
    expect(transitionEvents({ conditions: [c("OutputsValid", "False", "OutputsInvalid")] }, {}, facts)).toEqual([]);
  });

  it(
    "FailureDomainsChanged when published failure domains change or go; not on their first publication; the note names domains " + "only",
    () => {
      const cluster = { kind: "TerraformCluster" };
      expect(transitionEvents({}, { failureDomains: [{ name: "a", controlPlane: true }] }, cluster)).toEqual([]);
      expect(transitionEvents({ failureDomains: [{ name: "a" }] }, { failureDomains: [{ name: "b" }, { name: "a" }] }, cluster)).toEqual([
        { reason: "FailureDomainsChanged", type: "Normal", note: "failure domains now a, b (were a)" },
      ]);
      expect(
        transitionEvents(
          { failureDomains: [{ name: "a", controlPlane: false }] },
          { failureDomains: [{ name: "a", controlPlane: true }] },
          cluster,
        ),
      ).toHaveLength(1);
      expect(transitionEvents({ failureDomains: [{ name: "a" }] }, { failureDomains: null }, cluster)).toEqual([
        { reason: "FailureDomainsChanged", type: "Normal", note: "failure domains now none (were a)" },
      ]);
      // The same set in another order, or a patch that leaves them out, is no change.
      expect(
        transitionEvents({ failureDomains: [{ name: "a" }, { name: "b" }] }, { failureDomains: [{ name: "b" }, { name: "a" }] }, cluster),
      ).toEqual([]);
      expect(transitionEvents({ failureDomains: [{ name: "a" }] }, {}, cluster)).toEqual([]);
    },
  );

  it("ExportsNotPublished once when exports become too large: the pass that clears published exports, or the first state read", () => {
    const tooLarge = { kind: "TerraformCluster", exportsNotPublished: { bytes: 70_000, limit: 65_536 } };
    const reasons = (before: StatusView, written: StatusView) => transitionEvents(before, written, tooLarge).map((event) => event.reason);
    expect(reasons({ exports: { a: 1 }, observedStateSerial: 3 }, { exports: null, observedStateSerial: 4 })).toEqual([
      "ExportsNotPublished",
    ]);
    expect(reasons({}, { exports: null, observedStateSerial: 1 })).toEqual(["ExportsNotPublished"]);
    // Already cleared: said before, also when a later apply, refresh or drift Job writes a new state.
    expect(reasons({ observedStateSerial: 3 }, { exports: null, observedStateSerial: 3 })).toEqual([]);
    expect(reasons({ observedStateSerial: 3 }, { exports: null, observedStateSerial: 4 })).toEqual([]);
    expect(transitionEvents({ exports: { a: 1 } }, { exports: { a: 2 }, observedStateSerial: 4 }, { kind: "TerraformCluster" })).toEqual(
      [],
    );
  });
});

describe("jobStartEvents", () => {
  const start = (extra: Partial<Parameters<typeof jobStartEvents>[0]>) =>
    jobStartEvents({
      op: "apply",
      job: "j",
      decision: { reason: "InputsChanged" },
      inputsHash: "h2:new",
      startedApplyHash: "h2:old",
      appliedHash: "h2:old",
      ...extra,
    });

  it("InputsChanged and a hash change counted when an apply of new inputs starts after a successful apply", () => {
    expect(start({})).toEqual({
      events: [{ reason: "InputsChanged", type: "Normal", note: expect.stringContaining("h2:old -> h2:new") }],
      inputsHashChanged: true,
    });
  });

  it("names the last successful apply's hash, not that of an apply started since that did not succeed (a blocked plan)", () => {
    expect(start({ startedApplyHash: "h2:blocked" }).events).toEqual([
      expect.objectContaining({ reason: "InputsChanged", note: expect.stringContaining("(h2:old -> h2:new)") }),
    ]);
    expect(start({ startedApplyHash: undefined, appliedHash: undefined }).events[0]?.note).toContain("(none -> h2:new)");
  });

  it("no InputsChanged for a retry of the same inputs, nor for other reasons or operations", () => {
    expect(start({ startedApplyHash: "h2:new" })).toEqual({ events: [], inputsHashChanged: false });
    expect(start({ decision: { reason: "NoState" } })).toEqual({ events: [], inputsHashChanged: false });
    expect(start({ op: "plan" })).toEqual({ events: [], inputsHashChanged: false });
  });

  it("DriftRemediationStarted when a remediation apply starts", () => {
    expect(
      start({ decision: { reason: "DriftRemediation", remediation: true }, startedApplyHash: "h2:new" }).events.map(
        (event) => event.reason,
      ),
    ).toEqual(["DriftRemediationStarted"]);
    expect(start({ op: "drift", decision: { reason: "DriftDue" } }).events).toEqual([]);
  });
});

describe("resourceChanges", () => {
  it("the four actions of a Job's reported changes, none without a report", () => {
    expect(resourceChanges({ add: 2, change: 1, destroy: 0 })).toEqual([
      { action: "add", count: 2 },
      { action: "change", count: 1 },
      { action: "destroy", count: 0 },
      { action: "import", count: 0 },
    ]);
    expect(resourceChanges(undefined)).toEqual([]);
  });
});

describe("publishedExports", () => {
  it("publishes exports up to 65536 bytes of compact JSON; larger ones are cleared, with their size", () => {
    const fits = { blob: "x".repeat(65536 - '{"blob":""}'.length) };
    expect(publishedExports(fits)).toEqual({ exports: fits });
    expect(publishedExports({ blob: `${fits.blob}y` })).toEqual({ exports: null, bytes: 65537 });
  });
});
