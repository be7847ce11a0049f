/** Every kind of infrastructure.cluster.x-k8s.io/v1alpha1, in the order the API reference lists them. */
import type { KindDefinition } from "./resource.js";
import { terraformClusterDefinition } from "./terraformcluster.js";
import { terraformClusterIdentityDefinition } from "./terraformclusteridentity.js";
import { terraformMachineDefinition } from "./terraformmachine.js";
import { terraformMachinePoolDefinition } from "./terraformmachinepool.js";
import { terraformModulePolicyDefinition } from "./terraformmodulepolicy.js";
import { terraformNotificationReceiverDefinition } from "./terraformnotificationreceiver.js";
import {
  terraformClusterTemplateDefinition,
  terraformMachinePoolTemplateDefinition,
  terraformMachineTemplateDefinition,
} from "./templates.js";

export const kindDefinitions: readonly KindDefinition[] = [
  terraformClusterDefinition,
  terraformClusterTemplateDefinition,
  terraformMachineDefinition,
  terraformMachineTemplateDefinition,
  terraformMachinePoolDefinition,
  terraformMachinePoolTemplateDefinition,
  terraformClusterIdentityDefinition,
  terraformModulePolicyDefinition,
  terraformNotificationReceiverDefinition,
];
