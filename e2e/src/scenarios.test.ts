// captf as a Cluster API infrastructure provider, end to end: Cluster API's own core manager drives
// it, captf runs as `clusterctl init` installs it from its clusterctl assets (config/install.yaml's
// objects: its Deployment, its ServiceAccount, its RBAC), and the user's objects come from
// e2e/manifests/demo. One plane for the whole suite (it takes minutes to start); the scenarios,
// one file each under scenarios/, run on it in this order, each starting where the last one left it.
import { afterAll, beforeAll } from "@jest/globals";
import { describeWithTools } from "@captf/testkit";
import { bringUp } from "./scenarios/bring-up.js";
import { clusterctlGenerate } from "./scenarios/clusterctl-generate.js";
import { clusterctlMove } from "./scenarios/clusterctl-move.js";
import { failingModule } from "./scenarios/failing-module.js";
import { healthRemediation } from "./scenarios/health-remediation.js";
import { hostileModuleContained } from "./scenarios/hostile-module-contained.js";
import { interruptedRuns } from "./scenarios/interrupted-runs.js";
import { moduleAuthor } from "./scenarios/module-author.js";
import { needsAPerson } from "./scenarios/needs-a-person.js";
import { noSecretLeaks } from "./scenarios/no-secret-leaks.js";
import { declareNotificationReceivers, notificationsDelivered } from "./scenarios/notifications.js";
import { approvePlan } from "./scenarios/plan-approval.js";
import { roll } from "./scenarios/roll.js";
import { scale } from "./scenarios/scale.js";
import { signedEncryptedState } from "./scenarios/signed-encrypted-state.js";
import { SharedPlane, type Scenario } from "./scenarios/shared-plane.js";
import { teardown } from "./scenarios/teardown.js";
import { traces } from "./scenarios/traces.js";

/**
 * The scenarios in the order they run: a later one may use what an earlier one left (the demo, the clusterctl clusters);
 * teardown stays last.
 */
const scenarios: Scenario[] = [
  bringUp,
  traces,
  declareNotificationReceivers,
  scale,
  roll,
  approvePlan,
  failingModule,
  interruptedRuns,
  healthRemediation,
  needsAPerson,
  notificationsDelivered,
  noSecretLeaks,
  clusterctlGenerate,
  clusterctlMove,
  hostileModuleContained,
  moduleAuthor,
  signedEncryptedState,
  teardown,
];

describeWithTools(
  [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "tofu",
    "terraform",
    "capi-manager",
    "clusterctl",
    "go",
    "umoci",
    "skopeo",
    "docker-registry",
    "cosign",
    "otelcol",
  ],
  "captf under Cluster API, installed from its manifests",
  () => {
    const shared = new SharedPlane();
    beforeAll(shared.start, 900_000);
    afterAll(shared.stop, 120_000);
    for (const scenario of scenarios) scenario(shared);
  },
);
