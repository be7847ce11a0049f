import { fileURLToPath } from "node:url";
import { describeModuleRootSuites } from "@captf/testkit";

// The root module with the real hashicorp/google (mock_provider needs its schema): tofu init, tofu
// validate and every run of tests/. The provider is an optional extra: from CAPTF_PROVIDER_MIRROR
// or the registry; when neither has it the suite is listed under "did not run", never passed.
describeModuleRootSuites(
  fileURLToPath(new URL("..", import.meta.url)),
  ["hashicorp/google"],
  "the GCP machinepool module's root suites with hashicorp/google",
);
