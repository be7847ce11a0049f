import { randomBytes } from "node:crypto";
import { eventReporters, managerEventReasons, type ManagerEventReason } from "@captf/contract/api";
import type { Logger } from "pino";
import { builtinTypes } from "../runtime/builtin-types.js";
import { microTime, type KubeApi } from "../runtime/kube-client.js";

/**
 * The manager's events (`events.k8s.io/v1`, reporting controller `captf-manager`). Recording is
 * best effort: a failed write is logged and never fails a reconcile pass.
 */

export interface EventSubject {
  apiVersion: string;
  kind: string;
  /** Undefined for a cluster-scoped object: its events go to {@link clusterScopedEventNamespace}. */
  namespace?: string | undefined;
  name: string;
  uid: string;
}

/** Where client-go records the events of cluster-scoped objects (a TerraformClusterIdentity's). */
export const clusterScopedEventNamespace = "default";

export interface EventRecorder {
  /**
   * `note` is shown to users: it names objects and reasons, never secret values. `type` overrides the reason's declared type
   * (ConditionChanged and PlanSuperseded are Warnings only in some cases).
   */
  record(subject: EventSubject, reason: ManagerEventReason, note: string, action?: string, type?: "Normal" | "Warning"): Promise<void>;
}

/** Events API notes are capped at 1 KiB. */
const maxNoteLength = 1024;

export function kubeEventRecorder(client: KubeApi, options: { instance: string; logger?: Logger; now?: () => number }): EventRecorder {
  const now = options.now ?? Date.now;
  return {
    async record(subject, reason, note, action = reason, type = managerEventReasons[reason]) {
      // <object>.<hex time><random>, the object's name cut so the whole stays a valid name (at most 253).
      const name = `${subject.name.slice(0, 200).replace(/[-.]+$/, "")}.${Date.now().toString(16)}${randomBytes(3).toString("hex")}`;
      const namespace = subject.namespace ?? clusterScopedEventNamespace;
      await client
        .create(builtinTypes.event, namespace, {
          apiVersion: "events.k8s.io/v1",
          kind: "Event",
          metadata: { name, namespace },
          // MicroTime: the API server rejects an eventTime without six fractional digits.
          eventTime: microTime(now()),
          reportingController: eventReporters.manager,
          reportingInstance: options.instance,
          action,
          reason,
          type,
          note: note.length > maxNoteLength ? `${note.slice(0, maxNoteLength - 1)}…` : note,
          regarding: {
            apiVersion: subject.apiVersion,
            kind: subject.kind,
            ...(subject.namespace ? { namespace: subject.namespace } : {}),
            name: subject.name,
            ...(subject.uid ? { uid: subject.uid } : {}),
          },
        })
        .then(
          () => undefined,
          (error: unknown) =>
            options.logger?.warn(
              {
                reason,
                object: subject.namespace ? `${subject.namespace}/${subject.name}` : subject.name,
                error: (error as Error).message,
              },
              "could not record an event",
            ),
        );
    },
  };
}

/** Records nothing: for passes run without a recorder (unit tests, tools). */
export const discardEvents: EventRecorder = { record: async () => undefined };
