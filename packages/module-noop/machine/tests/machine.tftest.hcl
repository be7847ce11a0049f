# tofu test for the no-op machine module. Runs share one state, in order, the
# way successive applies of one TerraformMachine would.

variables {
  captf_contract        = "v1alpha1"
  captf_cluster         = { name = "prod", namespace = "team-a" }
  captf_object          = { kind = "TerraformMachine", name = "prod-md-0-abcde", namespace = "team-a" }
  captf_cluster_outputs = { backend_id = "noop-backend-1234" }
  captf_tags = {
    "captf.io/cluster"    = "prod"
    "captf.io/namespace"  = "team-a"
    "captf.io/kind"       = "TerraformMachine"
    "captf.io/name"       = "prod-md-0-abcde"
    "captf.io/managed-by" = "captf"
    "captf.io/template"   = "prod-md-0"
  }
  machine_name = "prod-md-0-xyz12"
  # "#cloud-config\n"
  bootstrap_data     = "I2Nsb3VkLWNvbmZpZwo="
  bootstrap_format   = "cloud-config"
  failure_domain     = null
  kubernetes_version = null
  control_plane      = false
}

run "defaults" {
  assert {
    condition     = output.provider_id == "noop:///team-a/prod-md-0-xyz12"
    error_message = "provider_id must be noop:///<namespace>/<machine_name>."
  }
  assert {
    condition     = output.addresses == [{ type = "InternalIP", address = "10.0.0.1" }]
    error_message = "addresses must be the single InternalIP 10.0.0.1."
  }
  assert {
    condition     = output.failure_domain == null
    error_message = "Without a requested failure domain the output must be null."
  }
  assert {
    condition     = output.interruptible == false
    error_message = "interruptible must be false."
  }
  assert {
    condition     = output.health == { state = "running", healthy = true, message = null, reasons = [] }
    error_message = "health must be running and healthy."
  }
  assert {
    condition     = terraform_data.instance.input.tags == tomap(var.captf_tags)
    error_message = "The stand-in instance must carry captf_tags."
  }
  assert {
    condition     = terraform_data.instance.input.backend_id == "noop-backend-1234"
    error_message = "The stand-in instance must take backend_id from the cluster's exports."
  }
  assert {
    condition     = terraform_data.instance.input.user_data_sha256 == sha256("#cloud-config\n")
    error_message = "The state must hold the digest of the decoded bootstrap data."
  }
  assert {
    condition     = length(data.terraform_remote_state.hold) == 0
    error_message = "Without hold_apply_url no run may wait on a URL."
  }
}

run "held_by_a_url" {
  command = plan
  variables {
    hold_apply_url = "http://127.0.0.1:9/hold"
  }
  override_data {
    target = data.terraform_remote_state.hold
    values = {
      outputs = {}
    }
  }
  assert {
    condition     = length(data.terraform_remote_state.hold) == 1 && data.terraform_remote_state.hold[0].backend == "http"
    error_message = "With hold_apply_url every run must read a state over HTTP from it first."
  }
  assert {
    condition     = data.terraform_remote_state.hold[0].config.address == "http://127.0.0.1:9/hold"
    error_message = "The hold must ask the URL it was given."
  }
}

run "observed_health" {
  command = plan
  variables {
    health_state_url = "http://127.0.0.1:9/health"
  }
  override_data {
    target = data.terraform_remote_state.observed
    values = {
      outputs = {
        health = { state = "running", healthy = false, message = "broken", reasons = ["E2EBroken"] }
      }
    }
  }
  assert {
    condition     = output.health.healthy == false && output.health.reasons[0] == "E2EBroken"
    error_message = "health must be what the observed state says when health_state_url is set."
  }
  assert {
    condition     = data.terraform_remote_state.observed[0].backend == "http" && endswith(data.terraform_remote_state.observed[0].config.address, "/health/${var.captf_object.name}")
    error_message = "The observed health must be asked of the URL, over HTTP, for this object."
  }
}

run "bootstrap_rotation_keeps_provider_id" {
  variables {
    # "#cloud-config\nruncmd: []\n"
    bootstrap_data = "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtdCg=="
    previous_id    = run.defaults.provider_id
  }
  assert {
    condition     = output.provider_id == var.previous_id
    error_message = "provider_id must not change while the machine lives."
  }
  assert {
    condition     = terraform_data.instance.input.user_data_sha256 == sha256("#cloud-config\nruncmd: []\n")
    error_message = "A new bootstrap token must reach the stand-in instance."
  }
}

run "requested_failure_domain" {
  variables {
    failure_domain     = "fd1"
    kubernetes_version = "v1.36.2+rke2r1"
    control_plane      = true
    bootstrap_format   = "ignition"
  }
  assert {
    condition     = output.failure_domain == "fd1"
    error_message = "A requested failure domain must be reported back unchanged."
  }
  assert {
    condition     = terraform_data.instance.input.control_plane && terraform_data.instance.input.kubernetes_version == "v1.36.2+rke2r1"
    error_message = "The stand-in instance must record the control-plane flag and version."
  }
}

run "externally_managed_cluster" {
  variables {
    captf_cluster_outputs = {}
  }
  assert {
    condition     = terraform_data.instance.input.backend_id == null
    error_message = "Empty cluster exports must leave backend_id null."
  }
  assert {
    condition     = output.provider_id == "noop:///team-a/prod-md-0-xyz12"
    error_message = "provider_id must not depend on the cluster's exports."
  }
}

run "rejects_other_contract_versions" {
  command = plan
  variables {
    captf_contract = "v1alpha2"
  }
  expect_failures = [var.captf_contract]
}

run "rejects_non_base64_bootstrap_data" {
  command = plan
  variables {
    bootstrap_data = "not base64!"
  }
  expect_failures = [var.bootstrap_data]
}

run "rejects_unknown_bootstrap_format" {
  command = plan
  variables {
    bootstrap_format = "yaml"
  }
  expect_failures = [var.bootstrap_format]
}
