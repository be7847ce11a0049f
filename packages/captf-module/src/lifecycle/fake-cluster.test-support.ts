// A fake cluster for the lifecycle's unit tests: objects with the API server's semantics the driver relies on (create
// refuses a name taken, a merge patch of spec bumps the generation, list by label), a clock whose sleep moves time,
// and a scripted stand-in for captf and Cluster API that moves the object one Job at a time on each tick. Knobs make
// a module misbehave: health that never settles, drift, a destroy that leaves a state Secret behind.
import { applyMergePatch } from "@captf/contract";
import { annotations, labels } from "@captf/contract/api";
import type { Clock, Condition, KubeObject, LifecycleClient, ObjectRef } from "./client.js";

const key = (ref: { kind: string; namespace?: string; name: string }) => `${ref.kind}/${ref.namespace ?? ""}/${ref.name}`;
const clone = <T>(value: T): T => structuredClone(value);

export interface FakeBehaviour {
  /** Ready stays False/NotReady with this message: a module whose health never settles. */
  neverReady?: string;
  /** The drift check finds drift. */
  drifts?: boolean;
  /** The destroy leaves the state Secret behind. */
  leavesState?: boolean;
  /** No state backup is listed. */
  noBackups?: boolean;
}

export class FakeCluster implements LifecycleClient {
  readonly objects = new Map<string, KubeObject>();
  readonly writes: string[] = [];
  time = 1_000_000;
  constructor(readonly behaviour: FakeBehaviour = {}) {}

  readonly clock: Clock = {
    now: () => this.time,
    sleep: async (ms) => {
      this.time += ms;
      this.tick();
    },
  };

  async get(ref: ObjectRef): Promise<KubeObject | undefined> {
    const found = this.objects.get(key(ref));
    return found && clone(found);
  }

  async list(_apiVersion: string, kind: string, namespace: string, labelSelector?: string): Promise<KubeObject[]> {
    const wanted = (labelSelector ?? "")
      .split(",")
      .filter(Boolean)
      .map((pair) => pair.split("=") as [string, string]);
    return [...this.objects.values()]
      .filter((o) => o.kind === kind && o.metadata.namespace === namespace)
      .filter((o) => wanted.every(([k, v]) => o.metadata.labels?.[k] === v))
      .map(clone);
  }

  async create(object: KubeObject): Promise<void> {
    if (this.objects.has(key({ ...object.metadata, kind: object.kind })))
      throw new Error(`${object.kind} ${object.metadata.name} already exists`);
    this.writes.push(`create ${object.kind}/${object.metadata.name}`);
    this.put({ ...clone(object), metadata: { ...clone(object.metadata), generation: 1 } });
  }

  async patch(ref: ObjectRef, patch: Record<string, unknown>): Promise<void> {
    const current = this.objects.get(key(ref));
    if (!current) throw new Error(`${ref.kind} ${ref.name} not found`);
    this.writes.push(`patch ${ref.kind}/${ref.name} ${JSON.stringify(patch)}`);
    const next = applyMergePatch(clone(current), patch) as KubeObject;
    if (JSON.stringify(next.spec) !== JSON.stringify(current.spec)) next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    this.put(next);
  }

  async delete(ref: ObjectRef): Promise<void> {
    const current = this.objects.get(key(ref));
    if (!current) return;
    this.writes.push(`delete ${ref.kind}/${ref.name}`);
    if (current.kind.startsWith("Terraform")) current.metadata.deletionTimestamp = new Date(this.time).toISOString();
    else this.objects.delete(key(ref));
  }

  put(object: KubeObject): void {
    this.objects.set(key({ ...object.metadata, kind: object.kind }), object);
  }

  private subjects(): KubeObject[] {
    return [...this.objects.values()].filter((o) => o.kind.startsWith("Terraform"));
  }

  /** The generation each object's last apply ran for, by name: what the manager decides a new apply from. */
  private readonly appliedGenerations = new Map<string, number | undefined>();

  private setConditions(object: KubeObject, conditions: Record<string, [string, string, string?]>): void {
    const status = (object.status ??= {});
    const list: Condition[] = [...(status.conditions ?? [])];
    for (const [type, [s, reason, message]] of Object.entries(conditions)) {
      const at = list.findIndex((c) => c.type === type);
      // As the manager writes them: each condition says which generation it was computed for (no status.observedGeneration).
      const condition = { type, status: s, reason, ...(message ? { message } : {}), observedGeneration: object.metadata.generation };
      if (at >= 0) list[at] = condition;
      else list.push(condition);
    }
    status.conditions = list;
  }

  private owned(name: string, suffix: string): KubeObject[] {
    const ns = "scratch";
    const secret = (n: string): KubeObject => ({ apiVersion: "v1", kind: "Secret", metadata: { name: n, namespace: ns } });
    return [
      secret(`tfstate-default-${suffix}`),
      secret(`captf-state-backup-${suffix}-1`),
      { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: `captf-run-${suffix}`, namespace: ns } },
      {
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: `captf-x-${name}-apply-a1`, namespace: ns, labels: { [labels.ownerName]: name } },
      },
    ];
  }

  /** What captf and Cluster API do between two reads: one move per object. */
  tick(): void {
    // Cluster API: a deleted Machine or MachinePool deletes its infrastructure; a deleted Cluster its TerraformCluster.
    for (const subject of this.subjects()) {
      const ownerKind = { TerraformCluster: "Cluster", TerraformMachine: "Machine", TerraformMachinePool: "MachinePool" }[subject.kind]!;
      if (!this.objects.has(key({ kind: ownerKind, namespace: subject.metadata.namespace, name: subject.metadata.name })))
        subject.metadata.deletionTimestamp ??= new Date(this.time).toISOString();
    }
    for (const subject of this.subjects()) this.reconcile(subject);
  }

  private reconcile(subject: KubeObject): void {
    const name = subject.metadata.name;
    const suffix = `sfx-${name}`;
    const status = (subject.status ??= {}) as Record<string, unknown> & { conditions?: Condition[] };
    const active = status.activeJob as { operation: string } | undefined;
    if (subject.metadata.deletionTimestamp) {
      if (!active) {
        status.activeJob = { name: `captf-x-${name}-destroy-a1`, operation: "destroy" };
        return;
      }
      this.objects.delete(key({ ...subject.metadata, kind: subject.kind }));
      for (const object of this.owned(name, suffix)) {
        if (this.behaviour.leavesState && object.metadata.name.startsWith("tfstate-")) continue;
        this.objects.delete(key({ ...object.metadata, kind: object.kind }));
      }
      return;
    }
    if (active) {
      delete status.activeJob;
      this.appliedGenerations.set(name, subject.metadata.generation);
      status.initialization = { provisioned: true };
      status.stateSecretSuffix = suffix;
      status.observedStateSerial = ((status.observedStateSerial as number | undefined) ?? 0) + 1;
      if (!this.behaviour.noBackups) status.stateBackups = [{ serial: status.observedStateSerial, takenAt: "t", bytes: 10 }];
      if (active.operation === "drift") {
        status.lastDriftCheck = new Date(this.time).toISOString();
        this.setConditions(subject, {
          DriftJobSucceeded: ["True", "DriftChecked"],
          DriftDetected: this.behaviour.drifts ? ["True", "DriftReported", "1 to change: terraform_data.instance"] : ["False", "NoDrift"],
        });
      }
      if (active.operation === "restore") {
        const serial = Number(subject.metadata.annotations?.[annotations.restoreState]);
        delete subject.metadata.annotations![annotations.restoreState];
        status.lastRestoredSerial = serial;
        this.setConditions(subject, { RestoreJobSucceeded: ["True", "StateRestored"] });
      }
      if (subject.kind === "TerraformMachinePool") {
        const pool = this.objects.get(key({ kind: "MachinePool", namespace: subject.metadata.namespace, name }));
        const replicas = (pool?.spec?.replicas as number | undefined) ?? 0;
        subject.spec = { ...subject.spec, providerIDList: Array.from({ length: replicas }, (_, i) => `noop://${name}/${i}`) };
        status.replicas = replicas;
      }
      const ready: [string, string, string?] = this.behaviour.neverReady
        ? ["False", "NotReady", this.behaviour.neverReady]
        : ["True", "Ready"];
      this.setConditions(subject, { Ready: ready, InputsApplied: ["True", "InputsApplied"] });
      for (const object of this.owned(name, suffix)) this.put(object);
      return;
    }
    // What to run next, as the manager decides it (much simplified).
    const pool = this.objects.get(key({ kind: "MachinePool", namespace: subject.metadata.namespace, name }));
    const members = Array.isArray(subject.spec?.providerIDList) ? subject.spec.providerIDList.length : 0;
    const changed =
      this.appliedGenerations.get(name) !== subject.metadata.generation || (pool !== undefined && pool.spec?.replicas !== members);
    const restore = subject.metadata.annotations?.[annotations.restoreState];
    const drift = (subject.spec?.drift as { intervalSeconds?: number } | undefined)?.intervalSeconds;
    let operation: string | undefined;
    if (restore) operation = "restore";
    else if (changed) operation = "apply";
    else if (drift !== undefined && drift > 0 && status.driftDue !== drift) {
      operation = "drift";
      status.driftDue = drift;
    }
    if (!operation) return;
    status.activeJob = { name: `captf-x-${name}-${operation}-a1`, operation };
    this.setConditions(subject, {
      Ready: status.initialization ? ["True", "Ready"] : ["False", "NotReady", "the first apply runs"],
      InputsApplied: operation === "apply" ? ["False", "ApplyRunning"] : ["True", "InputsApplied"],
    });
  }
}
