/**
 * The TerraformMachineTemplate controller (`--terraformmachinetemplate-concurrency` workers): a pass
 * runs only when the template needs resolving (see {@link resolutionNeeded}); it reads the image's
 * config over the registry API with the template's imagePullSecrets, reads the template's variables,
 * and writes capacity, nodeInfo, capacitySource, CapacityResolved and VariablesValid in one status
 * patch. A failed inspection is retried after 30 s doubling to 10 minutes; the consecutive failures
 * are counted in memory (a restarted manager starts again at 30 s).
 */
import type { V1Secret } from "@kubernetes/client-node";
import { replacingMergePatch } from "@captf/contract";
import { apiGroup, apiVersion, groupVersion, kinds } from "@captf/contract/api";
import { terraformMachineTemplateDefinition, type TerraformMachineTemplate } from "../api/templates.js";
import type { EventRecorder } from "../events/event-recorder.js";
import type { CaptfMetrics } from "../metrics/captf-metrics.js";
import { readUserVariables } from "../kinds/read-variables.js";
import { undefinedIfNotFound, isNotFound } from "../runtime/api-errors.js";
import { generationOrMetadataChanged, watchSelf, type Controller } from "../runtime/controller.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi, ResourceType } from "../runtime/kube-client.js";
import { inspectImage, ociArchitecture, type ImageInspection } from "./inspect-image.js";
import {
  decideTemplateStatus,
  inspectRetryDelayMillis,
  resolutionNeeded,
  templateImage,
  variablesSourceRetryMillis,
  type TemplateStatusDecision,
} from "./template-status.js";

export const machineTemplateResourceType: ResourceType = {
  group: apiGroup,
  version: apiVersion,
  plural: terraformMachineTemplateDefinition.plural,
  kind: kinds.machineTemplate,
  namespaced: true,
};

export interface TemplateControllerDeps {
  client: KubeApi;
  events: EventRecorder;
  metrics: Pick<CaptfMetrics, "imageInspectErrors">;
}

export interface TemplateControllerOptions {
  concurrency?: number;
  /** The platform architecture whose image an index resolves to; default this process's. */
  architecture?: string;
  now?: () => number;
  /** Reads one image's labels; default over the registry API. */
  inspect?: typeof inspectImage;
}

/** Consecutive failed inspections of one image at one generation. */
interface FailedInspections {
  image: string;
  generation: number | undefined;
  failures: number;
  retryAt: number;
}

/** A merge patch that replaces `next` wholesale: keys `previous` had and `next` lacks become null; no `next` removes the field. */
export function replacing(previous: object | undefined, next: object | undefined): object | null {
  if (next === undefined) return null;
  return replacingMergePatch(previous, next) as object;
}

function statusPatch(template: TerraformMachineTemplate, status: TemplateStatusDecision["status"]): object {
  const previous = template.status ?? {};
  return {
    status: {
      capacity: replacing(previous.capacity, status.capacity),
      nodeInfo: replacing(previous.nodeInfo, status.nodeInfo),
      capacitySource: replacing(previous.capacitySource, status.capacitySource),
      conditions: status.conditions,
    },
  };
}

async function readPullSecrets(client: KubeApi, namespace: string, template: TerraformMachineTemplate): Promise<V1Secret[]> {
  const names = (template.spec.template.spec.jobs?.imagePullSecrets ?? [])
    .map((reference) => reference.name)
    .filter((name): name is string => !!name);
  // A missing Secret is skipped, as the kubelet does.
  const secrets = await Promise.all(names.map((name) => undefinedIfNotFound(client.get<V1Secret>(builtinTypes.secret, namespace, name))));
  return secrets.filter((secret): secret is V1Secret => secret !== undefined);
}

export function machineTemplateController(deps: TemplateControllerDeps, options: TemplateControllerOptions = {}): Controller {
  const now = options.now ?? Date.now;
  const architecture = options.architecture ?? ociArchitecture();
  const inspect = options.inspect ?? inspectImage;
  const failed = new Map<string, FailedInspections>();
  return {
    name: kinds.machineTemplate.toLowerCase(),
    kind: kinds.machineTemplate,
    concurrency: options.concurrency ?? 1,
    watches: [watchSelf(machineTemplateResourceType, generationOrMetadataChanged)],
    async reconcile(key, context) {
      const namespace = context.namespace ?? "";
      let template: TerraformMachineTemplate;
      try {
        template = await deps.client.get<TerraformMachineTemplate>(machineTemplateResourceType, namespace, context.name);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        failed.delete(key);
        return {};
      }
      if (!resolutionNeeded(template)) return {};
      const image = templateImage(template);
      const generation = template.metadata?.generation;
      const earlier = failed.get(key);
      const sameAttempt = earlier?.image === image && earlier.generation === generation;
      // Woken before the back-off ran out (a resync, a metadata change): wait for it.
      if (sameAttempt && earlier.retryAt > now()) return { requeueAfterMillis: earlier.retryAt - now() };

      const inspection: ImageInspection = await inspect(image, {
        pullSecrets: await readPullSecrets(deps.client, namespace, template),
        architecture,
      });
      const variables = await readUserVariables(deps.client, "machine", namespace, template.spec.template.spec);
      const decision = decideTemplateStatus({ template, inspection, variables, now: now() });
      if (decision.changed)
        await deps.client.patchStatus(
          machineTemplateResourceType,
          namespace,
          context.name,
          statusPatch(template, decision.status),
          "merge",
        );

      const subject = {
        apiVersion: groupVersion,
        kind: kinds.machineTemplate,
        namespace,
        name: context.name,
        uid: template.metadata?.uid ?? "",
      };
      let requeueAfterMillis: number | undefined = decision.variablesPending ? variablesSourceRetryMillis : undefined;
      if (!inspection.ok) {
        const failures = (sameAttempt ? earlier.failures : 0) + 1;
        const delay = inspectRetryDelayMillis(failures);
        failed.set(key, { image, generation, failures, retryAt: now() + delay });
        deps.metrics.imageInspectErrors.inc({ reason: inspection.failure });
        if (failures === 1)
          await deps.events.record(
            subject,
            "ImageInspectFailed",
            `reading the config of ${image} failed: ${inspection.message}; retrying with back-off`,
            "InspectImage",
          );
        requeueAfterMillis = Math.min(requeueAfterMillis ?? delay, delay);
        context.logger.info({ image, failure: inspection.failure, failures, retryInMillis: delay }, "image inspection failed");
      } else {
        failed.delete(key);
      }
      if (decision.event?.reason === "ImageInspectFailed") deps.metrics.imageInspectErrors.inc({ reason: "label_invalid" });
      if (decision.event) await deps.events.record(subject, decision.event.reason, decision.event.note, "InspectImage");
      const capacity = decision.status.conditions.find((condition) => condition.type === "CapacityResolved");
      const variablesValid = decision.status.conditions.find((condition) => condition.type === "VariablesValid");
      context.logger.info(
        { image, capacity: capacity?.reason, variables: variablesValid?.reason, patched: decision.changed },
        "reconciled",
      );
      return requeueAfterMillis !== undefined ? { requeueAfterMillis } : {};
    },
  };
}
