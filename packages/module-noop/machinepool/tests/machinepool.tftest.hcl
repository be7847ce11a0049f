# tofu test for the no-op machinepool module. Runs share one state, in order,
# the way successive applies of one TerraformMachinePool would.

variables {
  captf_contract        = "v1alpha1"
  captf_cluster         = { name = "prod", namespace = "team-a" }
  captf_object          = { kind = "TerraformMachinePool", name = "mp", namespace = "team-a" }
  captf_cluster_outputs = { backend_id = "noop-backend-1234" }
  captf_tags = {
    "captf.io/cluster"    = "prod"
    "captf.io/namespace"  = "team-a"
    "captf.io/kind"       = "TerraformMachinePool"
    "captf.io/name"       = "mp"
    "captf.io/managed-by" = "captf"
    "captf.io/template"   = ""
  }
  machinepool_name = "mp"
  replicas         = 3
  # "#cloud-config\n"
  bootstrap_data          = "I2Nsb3VkLWNvbmZpZwo="
  bootstrap_format        = "cloud-config"
  failure_domains         = []
  cluster_failure_domains = ["fd1", "fd2"]
  kubernetes_version      = null
  node_labels             = { pool = "mp" }
  autoscaling             = { enabled = false, min = 0, max = 0 }
}

run "three_replicas" {
  assert {
    condition     = output.provider_id == "noop-group:///team-a/mp"
    error_message = "provider_id must be noop-group:///<namespace>/<object name>."
  }
  assert {
    condition     = output.provider_id_list == tolist(["noop:///team-a/mp/0", "noop:///team-a/mp/1", "noop:///team-a/mp/2"])
    error_message = "provider_id_list must list noop:///<namespace>/<name>/<i> for each replica."
  }
  assert {
    condition     = output.replicas == 3
    error_message = "replicas must be the desired count."
  }
  assert {
    condition     = tolist([for i in output.instances : i.provider_id]) == output.provider_id_list
    error_message = "instances must hold one entry per member."
  }
  assert {
    condition     = tolist([for i in output.instances : i.failure_domain]) == tolist(["fd1", "fd2", "fd1"])
    error_message = "Without requested failure domains members must spread over the cluster's."
  }
  assert {
    condition     = alltrue([for i in output.instances : i.state == "running"])
    error_message = "Every member must be running."
  }
  assert {
    condition     = output.health == { state = "running", healthy = true, message = null, reasons = [] }
    error_message = "health must be running and healthy at capacity."
  }
  assert {
    condition     = terraform_data.group.input.tags == tomap(var.captf_tags)
    error_message = "The stand-in group must carry captf_tags."
  }
  assert {
    condition     = terraform_data.group.input.min_size == 3 && terraform_data.group.input.max_size == 3
    error_message = "With autoscaling off the size limits must be pinned to replicas."
  }
  assert {
    condition     = length(terraform_data.autoscaler) == 0
    error_message = "With autoscaling off there is no autoscaler."
  }
  assert {
    condition     = terraform_data.group.input.backend_id == "noop-backend-1234"
    error_message = "The stand-in group must take backend_id from the cluster's exports."
  }
}

run "zero_replicas" {
  variables {
    replicas = 0
  }
  assert {
    condition     = length(output.provider_id_list) == 0 && length(output.instances) == 0 && output.replicas == 0
    error_message = "An empty pool has no members."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy
    error_message = "An empty pool is running and healthy."
  }
}

run "provider_id_list_is_sorted" {
  variables {
    replicas        = 12
    failure_domains = ["fd3"]
  }
  assert {
    condition     = output.provider_id_list == sort(distinct(output.provider_id_list)) && length(output.provider_id_list) == 12
    error_message = "provider_id_list must be sorted and free of duplicates."
  }
  assert {
    condition     = output.provider_id_list[2] == "noop:///team-a/mp/10"
    error_message = "provider_id_list must be in string order (/10 before /2)."
  }
  assert {
    condition     = toset([for i in output.instances : i.failure_domain]) == toset(["fd3"])
    error_message = "Requested failure domains must win over the cluster's."
  }
}

run "autoscaling_on" {
  variables {
    replicas    = 2
    autoscaling = { enabled = true, min = 1, max = 5 }
  }
  assert {
    condition     = output.replicas == 2 && length(output.provider_id_list) == 2
    error_message = "Switching autoscaling on must start from the rendered replicas."
  }
  assert {
    condition     = terraform_data.group.input.min_size == 1 && terraform_data.group.input.max_size == 5
    error_message = "With autoscaling on the size limits must come from the autoscaling input."
  }
  assert {
    condition     = length(terraform_data.autoscaler) == 1
    error_message = "With autoscaling on the autoscaler must exist."
  }
}

run "autoscaling_module_does_not_reset_the_count" {
  variables {
    replicas    = 4
    autoscaling = { enabled = true, min = 1, max = 5 }
  }
  assert {
    condition     = output.replicas == 2 && length(output.provider_id_list) == 2
    error_message = "With autoscaling on an apply must not overwrite the autoscaler's count."
  }
}

run "autoscaling_range_clamps_the_count" {
  variables {
    replicas    = 2
    autoscaling = { enabled = true, min = 3, max = 5 }
  }
  assert {
    condition     = output.replicas == 3 && length(output.provider_id_list) == 3
    error_message = "A raised minimum must raise the count."
  }
  assert {
    condition     = output.health == { state = "running", healthy = true, message = null, reasons = [] }
    error_message = "health must be running and healthy at capacity."
  }
}

run "autoscaling_off_again" {
  variables {
    replicas = 4
  }
  assert {
    condition     = output.replicas == 4 && length(output.provider_id_list) == 4
    error_message = "With autoscaling off replicas must be the count again."
  }
  assert {
    condition     = length(terraform_data.autoscaler) == 0
    error_message = "Switching autoscaling off must remove the autoscaler."
  }
}

run "bootstrap_rotation_keeps_provider_id" {
  variables {
    replicas = 4
    # "#cloud-config\nruncmd: []\n"
    bootstrap_data = "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtdCg=="
    previous_id    = run.autoscaling_off_again.provider_id
    previous_list  = run.autoscaling_off_again.provider_id_list
  }
  assert {
    condition     = output.provider_id == var.previous_id && output.provider_id_list == var.previous_list
    error_message = "A bootstrap token rotation must not change the group or its members."
  }
  assert {
    condition     = terraform_data.group.input.user_data_sha256 == sha256("#cloud-config\nruncmd: []\n")
    error_message = "A new bootstrap token must reach the stand-in group."
  }
}

run "rejects_negative_replicas" {
  command = plan
  variables {
    replicas = -1
  }
  expect_failures = [var.replicas]
}

run "rejects_fractional_replicas" {
  command = plan
  variables {
    replicas = 1.5
  }
  expect_failures = [var.replicas]
}

run "rejects_more_replicas_than_modelled" {
  command = plan
  variables {
    replicas = 1025
  }
  expect_failures = [terraform_data.group]
}

run "rejects_autoscaling_min_above_max" {
  command = plan
  variables {
    autoscaling = { enabled = true, min = 4, max = 2 }
  }
  expect_failures = [var.autoscaling]
}

run "accepts_any_range_while_autoscaling_is_off" {
  command = plan
  variables {
    autoscaling = { enabled = false, min = 4, max = 2 }
  }
  assert {
    condition     = output.replicas == 3
    error_message = "With autoscaling off its range must be ignored."
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
