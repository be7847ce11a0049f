import { fileURLToPath } from "node:url";
import { main } from "tfcapi-lint";
import { describeModuleImages } from "@captf/testkit";

// The Azure machinepool module as a real image per runtime (tags -opentofu and -terraform) in a
// loopback registry, passing tfcapi-lint's image checks under --strict, with hashicorp/azurerm in
// /captf/providers when it can be installed here (CAPTF_PROVIDER_MIRROR, the default mirror or a registry).
describeModuleImages(
  main,
  { name: "azure-machinepool", dir: fileURLToPath(new URL("..", import.meta.url)), role: "machinepool" },
  ["hashicorp/azurerm"],
  "the Azure machinepool module image",
);
