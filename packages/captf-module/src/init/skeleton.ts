// The files of a new module (`captf-module init`): pure text, one role at a time. The contract
// inputs come from tfcapi-lint's generator (the text `tfcapi-lint inputs` prints), the outputs
// from the role table's names; everything else is a starting point the author replaces.
import { contractVersion, kindOfRole, roleTables, type Role } from "@captf/contract/roles";
import { renderContractInputs, type Runtime } from "tfcapi-lint";

/** One file of the skeleton: its path relative to the module directory, and its text. */
export interface SkeletonFile {
  path: string;
  text: string;
}

/** The oldest runtimes the skeleton runs under: Terraform 1.5 (terraform_data, 1.4) and every OpenTofu. */
export const requiredVersion = ">= 1.5.0";

const versionsTf = `# The runtimes this module runs under: Terraform 1.5 and later, and every
# OpenTofu release (terraform_data needs Terraform 1.4). Keep the floor at
# or below 1.5.0 to ship a Terraform 1.5.7 image as well as an OpenTofu one.
#
# captf writes the root module that calls this one, with its own backend
# and provider installation: declare no backend and no cloud block here.
terraform {
  required_version = "${requiredVersion}"

  # Declare the providers your resources need, then run \`tofu init\` to
  # write .terraform.lock.hcl: \`captf-module build\` ships exactly the
  # versions that file locks. For example:
  #
  # required_providers {
  #   google = {
  #     source  = "hashicorp/google"
  #     version = "~> 6.0"
  #   }
  # }
}
`;

const health = `{
    state   = "running"
    healthy = true
    message = null
    reasons = []
  }`;

interface RoleTemplate {
  main: string;
  outputs: Record<string, { description: string; value: string }>;
  /** The test file's variables block body: one valid set of contract inputs. */
  testVariables: string;
  /** Assertions of the test's one run, as HCL condition and message pairs. */
  asserts: [string, string][];
}

const commonTestVariables = (role: Role, name: string) => `  captf_contract = "${contractVersion}"
  captf_cluster  = { name = "demo", namespace = "default" }
  captf_object   = { kind = "${kindOfRole[role]}", name = "${name}", namespace = "default" }
  captf_tags = {
    "captf.io/cluster"    = "demo"
    "captf.io/namespace"  = "default"
    "captf.io/kind"       = "${kindOfRole[role]}"
    "captf.io/name"       = "${name}"
    "captf.io/managed-by" = "captf"
    "captf.io/template"   = ""
  }`;

const templates: Record<Role, RoleTemplate> = {
  cluster: {
    main: `# What the cluster needs once: a network, a load balancer in front of the API
# servers, shared firewall rules. terraform_data stands in for them; replace
# it with your provider's resources, and pass var.captf_tags to the tags (or
# labels) of every resource that takes them.
resource "terraform_data" "cluster" {
  input = {
    name      = var.captf_cluster.name
    namespace = var.captf_cluster.namespace
    tags      = var.captf_tags
  }
}

locals {
  # The API server's address: the one the Cluster names when it names one,
  # else the one this module creates (your load balancer's). Keep it stable:
  # machines join the cluster at it.
  control_plane_endpoint = var.control_plane_endpoint != null ? var.control_plane_endpoint : {
    host = "\${var.captf_cluster.name}.\${var.captf_cluster.namespace}.example.invalid"
    port = coalesce(try(var.cluster_network.api_server_port, null), 6443)
  }
}
`,
    outputs: {
      control_plane_endpoint: {
        description: "The API server's endpoint: the user's, else the one this module creates.",
        value: "local.control_plane_endpoint",
      },
      failure_domains: { description: "The failure domains machines may be placed in; [] for none.", value: "[]" },
      exports: {
        description: "What every machine and pool module receives as captf_cluster_outputs: stable identifiers only.",
        value: "{\n    cluster_id = terraform_data.cluster.id\n  }",
      },
      health: {
        description: "The cluster infrastructure's health: running and healthy until the module observes otherwise.",
        value: health,
      },
    },
    testVariables: `${commonTestVariables("cluster", "demo")}
  control_plane_endpoint    = null
  kubernetes_version        = null
  control_plane_initialized = false
  cluster_network           = null`,
    asserts: [
      [
        'output.control_plane_endpoint == { host = "demo.default.example.invalid", port = 6443 }',
        "Without a user endpoint the module must return its own, on port 6443.",
      ],
      ["output.exports.cluster_id == terraform_data.cluster.id", "exports must carry the cluster's id."],
      ['output.health.state == "running" && output.health.healthy', "health must be running and healthy."],
    ],
  },
  machine: {
    main: `# One machine: terraform_data stands in for your cloud's instance. Replace it
# with your provider's resource: pass var.bootstrap_data as its user data
# (it is base64 already; never parse it), place it in var.failure_domain,
# and pass var.captf_tags to its tags (or labels).
resource "terraform_data" "instance" {
  input = {
    name             = var.machine_name
    failure_domain   = var.failure_domain
    control_plane    = var.control_plane
    bootstrap_format = var.bootstrap_format
    tags             = var.captf_tags
    # Only a digest: the join token in bootstrap_data stays out of the state.
    user_data_sha256 = sha256(var.bootstrap_data)
  }
}
`,
    outputs: {
      provider_id: {
        description: "The Node's spec.providerID: return it as soon as the instance exists, the same value every time.",
        value: 'terraform_data.instance.id != "" ? "example:///${var.captf_object.namespace}/${terraform_data.instance.id}" : null',
      },
      addresses: { description: "The instance's addresses ({type, address}: InternalIP, ExternalIP, Hostname, ...).", value: "[]" },
      failure_domain: {
        description: "The failure domain the instance runs in (the requested one, when one was).",
        value: "var.failure_domain",
      },
      interruptible: { description: "Whether the instance can be taken away (a spot instance): false here.", value: "false" },
      health: { description: "The instance's health: report what your cloud says about it.", value: health },
    },
    testVariables: `${commonTestVariables("machine", "demo-md-0-abcde")}
  captf_cluster_outputs = { cluster_id = "demo-cluster" }
  machine_name          = "demo-md-0-abcde"
  # "#cloud-config\\n"
  bootstrap_data     = "I2Nsb3VkLWNvbmZpZwo="
  bootstrap_format   = "cloud-config"
  failure_domain     = null
  kubernetes_version = null
  control_plane      = false`,
    asserts: [
      ['output.provider_id == "example:///default/${terraform_data.instance.id}"', "provider_id must name the instance."],
      ["output.failure_domain == null", "Without a requested failure domain the output must be null."],
      ["output.interruptible == false", "interruptible must be false."],
      ['output.health.state == "running" && output.health.healthy', "health must be running and healthy."],
    ],
  },
  machinepool: {
    main: `# A group of identical instances: terraform_data stands in for your cloud's
# scaling group (its launch template takes var.bootstrap_data as user data,
# and var.captf_tags as tags or labels).
locals {
  # Autoscaling off: the group holds exactly var.replicas. On: your cloud's
  # autoscaler moves the count within [min, max].
  min_size = var.autoscaling.enabled ? var.autoscaling.min : var.replicas
  max_size = var.autoscaling.enabled ? var.autoscaling.max : var.replicas
  zones    = length(var.failure_domains) > 0 ? var.failure_domains : var.cluster_failure_domains
}

resource "terraform_data" "group" {
  input = {
    name             = var.machinepool_name
    min_size         = local.min_size
    max_size         = local.max_size
    zones            = local.zones
    node_labels      = var.node_labels
    bootstrap_format = var.bootstrap_format
    tags             = var.captf_tags
    # Only a digest: the join token in bootstrap_data stays out of the state.
    user_data_sha256 = sha256(var.bootstrap_data)
  }
}

# While autoscaling is on, the desired count belongs to the cloud's
# autoscaler: it is seeded with var.replicas once and never written again
# (ignore_changes), so an apply does not undo a scaling decision. On a real
# group put the ignore_changes on its desired-capacity attribute.
resource "terraform_data" "autoscaler" {
  count = var.autoscaling.enabled ? 1 : 0

  input = {
    group            = terraform_data.group.id
    desired_capacity = var.replicas
  }

  lifecycle {
    ignore_changes = [input.desired_capacity]
  }
}

locals {
  desired_capacity = (
    var.autoscaling.enabled
    ? min(max(one(terraform_data.autoscaler[*].output.desired_capacity), local.min_size), local.max_size)
    : var.replicas
  )

  # One provider ID per member, as the Nodes will carry them: read them from
  # your group's instances.
  member_ids = [for i in range(local.desired_capacity) : "example:///\${var.captf_object.namespace}/\${terraform_data.group.id}/\${i}"]
}
`,
    outputs: {
      provider_id: {
        description: "The group's own ID.",
        value: 'terraform_data.group.id != "" ? "example-group:///${var.captf_object.namespace}/${terraform_data.group.id}" : null',
      },
      provider_id_list: { description: "Every member's provider ID, sorted and de-duplicated.", value: "sort(distinct(local.member_ids))" },
      replicas: { description: "The group's desired count, as the cloud reports it.", value: "local.desired_capacity" },
      instances: {
        description: "One entry per member: provider_id, and what else the cloud reports.",
        value: `[
    for i, id in local.member_ids : {
      provider_id    = id
      instance_id    = "\${var.machinepool_name}-\${i}"
      addresses      = []
      failure_domain = length(local.zones) > 0 ? local.zones[i % length(local.zones)] : null
      state          = "running"
    }
  ]`,
      },
      health: {
        description: "The group's health: running, and healthy once every member the desired count asks for exists.",
        value: `{
    state   = "running"
    healthy = length(local.member_ids) == local.desired_capacity
    message = null
    reasons = []
  }`,
      },
    },
    testVariables: `${commonTestVariables("machinepool", "demo-pool")}
  captf_cluster_outputs = { cluster_id = "demo-cluster" }
  machinepool_name      = "demo-pool"
  replicas              = 2
  # "#cloud-config\\n"
  bootstrap_data          = "I2Nsb3VkLWNvbmZpZwo="
  bootstrap_format        = "cloud-config"
  failure_domains         = []
  cluster_failure_domains = ["zone-a", "zone-b"]
  kubernetes_version      = null
  node_labels             = {}
  autoscaling             = { enabled = false, min = 0, max = 0 }`,
    asserts: [
      ["output.replicas == 2", "replicas must be the requested count while autoscaling is off."],
      ["length(output.provider_id_list) == 2", "provider_id_list must list one ID per member."],
      [
        '[for instance in output.instances : instance.failure_domain] == ["zone-a", "zone-b"]',
        "Members must spread over the cluster's failure domains.",
      ],
      ['output.health.state == "running" && output.health.healthy', "health must be running and healthy."],
    ],
  },
};

function outputsTf(role: Role): string {
  const template = templates[role];
  const blocks = roleTables[role].outputs.map(({ name }) => {
    const output = template.outputs[name];
    if (!output) throw new Error(`the ${role} skeleton has no value for the contract output ${name}`);
    // tofu fmt aligns the = of single-line attributes only.
    const value = output.value.includes("\n") ? "value =" : "value       =";
    return `output "${name}" {\n  description = ${JSON.stringify(output.description)}\n  ${value} ${output.value}\n}`;
  });
  const header = `# The ${role} role's contract outputs (${contractVersion}): every one must be declared.\n`;
  return `${header}# A null output means "not known yet"; captf waits for it.\n\n${blocks.join("\n\n")}\n`;
}

function testTf(role: Role): string {
  const asserts = templates[role].asserts
    .map(([condition, message]) => `  assert {\n    condition     = ${condition}\n    error_message = ${JSON.stringify(message)}\n  }`)
    .join("\n\n");
  return `# tofu test: runs the module with one set of contract inputs, as captf renders
# them for a ${kindOfRole[role]}. The skeleton needs no provider. When you add
# one, mock it here so the tests run without credentials or network:
#
# mock_provider "google" {}
#
# Terraform 1.5 has no \`terraform test\`: run these with OpenTofu.

variables {
${templates[role].testVariables}
}

run "first_apply" {
${asserts}
}
`;
}

function readme(role: Role, runtime: Runtime): string {
  return `# A captf ${role} module

A Terraform/OpenTofu child module for captf's \`${role}\` role (contract ${contractVersion}),
started by \`captf-module init --role ${role}\`. captf renders the root module that calls it,
owns its backend and provider installation, and reads its outputs.

| file | what it holds |
| --- | --- |
| \`inputs.tf\` | the contract inputs, generated by \`tfcapi-lint inputs --role ${role} --runtime ${runtime}\`: keep it unedited |
| \`outputs.tf\` | every contract output of the role; replace the placeholder values with your resources' |
| \`main.tf\` | the resources: \`terraform_data\` stands in for your cloud's |
| \`versions.tf\` | the runtimes it runs under (Terraform 1.5+ and OpenTofu) and, once you add them, its providers |
| \`tests/${role}.tftest.hcl\` | \`tofu test\`: one run with a valid set of contract inputs |

Put your own inputs in another file (\`variables.tf\`), each with a default.

## Check, test, build

\`\`\`sh
npx tfcapi-lint module . --role ${role} --strict
tofu init && tofu validate && tofu test
npx captf-module build --runtime "$(command -v tofu)" --out ./image --tag v0.1.0
npx tfcapi-lint image oci:./image:v0.1.0 --role ${role} --strict
\`\`\`

With providers, \`tofu init\` writes \`.terraform.lock.hcl\`, and \`build\` ships the locked versions
at \`/captf/providers\` from a mirror (\`--providers <dir>\`, filled by \`tofu providers mirror\`).
`;
}

const gitignore = `.terraform/
*.tfstate
*.tfstate.*
image/
`;

/** Every file of a new `role` module whose contract inputs target `runtime`. */
export function moduleSkeleton(role: Role, runtime: Runtime = "tofu"): SkeletonFile[] {
  return [
    { path: "README.md", text: readme(role, runtime) },
    { path: "versions.tf", text: versionsTf },
    { path: "inputs.tf", text: renderContractInputs(role, runtime) },
    { path: "main.tf", text: templates[role].main },
    { path: "outputs.tf", text: outputsTf(role) },
    { path: `tests/${role}.tftest.hcl`, text: testTf(role) },
    { path: ".gitignore", text: gitignore },
  ];
}
