# tofu test for the hostile machine module: plans only (an apply runs the attacks; the package's
# jest suite applies the generated root under both runtimes with a node of its own).

variables {
  captf_contract        = "v1alpha1"
  captf_cluster         = { name = "prod", namespace = "team-a" }
  captf_object          = { kind = "TerraformMachine", name = "prod-md-0-abcde", namespace = "team-a" }
  captf_cluster_outputs = {}
  captf_tags = {
    "captf.io/cluster"    = "prod"
    "captf.io/namespace"  = "team-a"
    "captf.io/kind"       = "TerraformMachine"
    "captf.io/name"       = "prod-md-0-abcde"
    "captf.io/managed-by" = "captf"
    "captf.io/template"   = "prod-md-0"
  }
  machine_name       = "prod-md-0-xyz12"
  bootstrap_data     = "I2Nsb3VkLWNvbmZpZwo="
  bootstrap_format   = "cloud-config"
  failure_domain     = null
  kubernetes_version = null
  control_plane      = false
}

run "contract_outputs_at_plan" {
  command = plan
  assert {
    condition     = output.addresses == [{ type = "InternalIP", address = "10.0.0.2" }]
    error_message = "addresses must be the single InternalIP 10.0.0.2."
  }
  assert {
    condition     = output.failure_domain == null && output.interruptible == false
    error_message = "failure_domain must be null without a request, interruptible false."
  }
  assert {
    condition     = output.health == { state = "running", healthy = true, message = null, reasons = [] }
    error_message = "health must be running and healthy: the attacks never fail the machine."
  }
}

run "attacks_with_the_jobs_node" {
  command = plan
  variables {
    hostile_targets = "{\"namespace\":\"team-a\"}"
    report_url      = "http://127.0.0.1:9/report"
  }
  assert {
    condition     = terraform_data.attack.input.node == "/captf/bin/node" && endswith(terraform_data.attack.input.program, "/attack.cjs")
    error_message = "The attacks must run attack.cjs with the node every Job has."
  }
  assert {
    condition     = jsondecode(terraform_data.attack.input.targets).namespace == "team-a" && terraform_data.attack.input.report_url == "http://127.0.0.1:9/report"
    error_message = "The targets and the report URL must reach the provisioners."
  }
}
