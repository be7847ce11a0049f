# Membership and every row of the pool's health table. No provider:
# `tofu init && tofu test` here.

variables {
  scale_set_name   = "workers-6a1f0c2e"
  scale_set_exists = true
  scale_set_listed = true
  capacity         = 3
  provider_id      = "azure:///subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/captf-demo/providers/Microsoft.Compute/virtualMachineScaleSets/workers-6a1f0c2e"
  instances = [
    { instance_id = "2", computer_name = "workers-6a1f0c2e000002", power_state = "running", private_ip_address = "10.0.1.6", zone = "3" },
    { instance_id = "0", computer_name = "workers-6a1f0c2e000000", power_state = "running", private_ip_address = "10.0.1.4", zone = "1" },
    { instance_id = "1", computer_name = "workers-6a1f0c2e000001", power_state = "running", private_ip_address = "10.0.1.5", zone = "2" },
  ]
}

run "row_6_every_instance_running_at_capacity" {
  assert {
    condition = output.provider_id_list == tolist([
      "${var.provider_id}/virtualMachines/0",
      "${var.provider_id}/virtualMachines/1",
      "${var.provider_id}/virtualMachines/2",
    ])
    error_message = "provider_id_list is <provider_id>/virtualMachines/<instance ID> of every instance, sorted."
  }
  assert {
    condition     = output.instances[1].instance_id == "1" && output.instances[1].failure_domain == "2" && output.instances[1].state == "running"
    error_message = "instances describe every member in provider ID order."
  }
  assert {
    condition     = jsonencode(output.instances[1].addresses) == jsonencode([{ type = "InternalIP", address = "10.0.1.5" }, { type = "Hostname", address = "workers-6a1f0c2e000001" }])
    error_message = "An instance's addresses are its private address and its hostname."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy && output.health.message == null && length(output.health.reasons) == 0
    error_message = "Every instance running at capacity is running and healthy."
  }
}

run "row_1_scale_set_gone" {
  variables {
    scale_set_exists = false
    scale_set_listed = false
    capacity         = null
    instances        = []
  }

  assert {
    condition     = output.health.state == "terminated" && !output.health.healthy && output.health.reasons == tolist(["ScaleSetNotFound"])
    error_message = "A scale set a refresh dropped is terminated, ScaleSetNotFound."
  }
}

run "row_2_capacity_zero" {
  variables {
    capacity  = 0
    instances = []
  }

  assert {
    condition     = output.health.state == "running" && output.health.healthy && length(output.provider_id_list) == 0
    error_message = "Capacity 0 is running and healthy."
  }
}

run "row_3_not_listed_yet" {
  variables {
    scale_set_listed = false
    instances        = []
  }

  assert {
    condition     = output.health.state == "pending" && !output.health.healthy && output.health.reasons == tolist(["NoMembers"]) && length(output.provider_id_list) == 0
    error_message = "A scale set the listing does not show yet is pending, NoMembers, with no members."
  }
}

run "row_3_no_instances" {
  variables {
    instances = []
  }

  assert {
    condition     = output.health.state == "pending" && output.health.reasons == tolist(["NoMembers"])
    error_message = "A scale set without instances is pending, NoMembers."
  }
}

run "row_4_stopped_and_deallocated_stay_members" {
  variables {
    instances = [
      { instance_id = "0", computer_name = "workers-6a1f0c2e000000", power_state = "running", private_ip_address = "10.0.1.4", zone = "1" },
      { instance_id = "1", computer_name = "workers-6a1f0c2e000001", power_state = "deallocated", private_ip_address = "10.0.1.5", zone = "2" },
      { instance_id = "2", computer_name = "workers-6a1f0c2e000002", power_state = "stopped", private_ip_address = "10.0.1.6", zone = "3" },
    ]
  }

  assert {
    condition     = length(output.provider_id_list) == 3 && [for i in output.instances : i.state] == ["running", "stopped", "stopped"]
    error_message = "Every listed instance is a member, whatever its power state."
  }
  assert {
    condition     = output.health.state == "stopped" && !output.health.healthy && output.health.reasons == tolist(["PowerState/deallocated:workers-6a1f0c2e000001", "PowerState/stopped:workers-6a1f0c2e000002"])
    error_message = "The worst state is the pool's, naming each affected instance by hostname."
  }
}

run "row_4_stopped_beats_unknown_and_starting" {
  variables {
    capacity = 4
    instances = [
      { instance_id = "0", computer_name = "workers-6a1f0c2e000000", power_state = "starting", private_ip_address = "10.0.1.4", zone = "1" },
      { instance_id = "1", computer_name = "workers-6a1f0c2e000001", power_state = "hibernated", private_ip_address = "10.0.1.5", zone = "2" },
      { instance_id = "2", computer_name = "workers-6a1f0c2e000002", power_state = "PowerState/stopping", private_ip_address = "10.0.1.6", zone = "3" },
    ]
  }

  assert {
    condition     = output.health.state == "stopped" && [for i in output.instances : i.state] == ["pending", "unknown", "stopped"]
    error_message = "stopped beats unknown; a power state the module does not know is unknown."
  }
  assert {
    condition     = output.health.reasons == tolist(["UnknownState:workers-6a1f0c2e000001", "PowerState/stopping:workers-6a1f0c2e000002", "PowerState/starting:workers-6a1f0c2e000000", "ScalingInProgress"])
    error_message = "reasons name the affected instances, then the starting ones, then ScalingInProgress while the count is off."
  }
}

run "row_5_starting_instances" {
  variables {
    instances = [
      { instance_id = "0", computer_name = "workers-6a1f0c2e000000", power_state = "running", private_ip_address = "10.0.1.4", zone = "1" },
      { instance_id = "1", computer_name = "workers-6a1f0c2e000001", power_state = "starting", private_ip_address = "10.0.1.5", zone = "2" },
      { instance_id = "2", computer_name = "workers-6a1f0c2e000002", power_state = "", private_ip_address = "", zone = "" },
    ]
  }

  assert {
    condition     = output.health.state == "running" && !output.health.healthy && output.health.reasons == tolist(["PowerState/starting:workers-6a1f0c2e000001", "PowerState/unknown:workers-6a1f0c2e000002"])
    error_message = "Starting instances leave the pool running, not healthy; pending is only for a pool without members."
  }
  assert {
    condition     = output.instances[2].failure_domain == null && jsonencode(output.instances[2].addresses) == jsonencode([{ type = "Hostname", address = "workers-6a1f0c2e000002" }])
    error_message = "An instance without a zone or address yet has neither."
  }
}

run "row_5_count_off_capacity" {
  variables {
    capacity = 5
  }

  assert {
    condition     = output.health.state == "running" && !output.health.healthy && output.health.reasons == tolist(["ScalingInProgress"])
    error_message = "Running instances short of the capacity are running, not healthy, ScalingInProgress."
  }
}
