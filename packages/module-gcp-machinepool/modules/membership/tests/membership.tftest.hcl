# Membership and every row of the pool's health table. No provider:
# `tofu init && tofu test` here.

variables {
  group_name       = "captf-team-a-demo-workers-1a2b3c4d"
  group_found      = true
  target_size      = 3
  awaiting_minimum = false
  members = [
    { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/workers-k2lp", status = "RUNNING" },
    { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "RUNNING" },
    { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/workers-z0de", status = "RUNNING" },
  ]
}

run "every_member_running_at_size" {
  assert {
    condition = output.provider_id_list == tolist([
      "gce://captf-test/us-central1-a/workers-9xq1",
      "gce://captf-test/us-central1-b/workers-k2lp",
      "gce://captf-test/us-central1-c/workers-z0de",
    ])
    error_message = "provider_id_list is gce://<project>/<zone>/<instance> of every member, sorted."
  }
  assert {
    condition = output.instances[0] == {
      provider_id    = "gce://captf-test/us-central1-a/workers-9xq1"
      instance_id    = "workers-9xq1"
      addresses      = []
      failure_domain = "us-central1-a"
      state          = "running"
    }
    error_message = "instances describe every member in provider ID order."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy && output.health.message == null && length(output.health.reasons) == 0
    error_message = "Every member running at the target size is running and healthy."
  }
}

run "row_1_group_not_found" {
  variables {
    group_found = false
    target_size = 0
    members     = []
  }

  assert {
    condition     = output.health.state == "terminated" && !output.health.healthy && output.health.reasons == tolist(["InstanceGroupNotFound"])
    error_message = "A group that no longer exists is terminated, InstanceGroupNotFound."
  }
  assert {
    condition     = length(output.provider_id_list) == 0 && length(output.instances) == 0
    error_message = "A group that no longer exists has no members."
  }
}

run "row_2_scaled_to_zero" {
  variables {
    target_size = 0
    members     = []
  }

  assert {
    condition     = output.health.state == "running" && output.health.healthy && length(output.health.reasons) == 0
    error_message = "Target size 0 is running and healthy."
  }
}

run "row_2_scaled_to_zero_with_members_leaving" {
  variables {
    target_size = 0
  }

  assert {
    condition     = output.health.state == "running" && output.health.healthy
    error_message = "Target size 0 is running and healthy even while members are still going."
  }
}

run "row_2_not_while_an_autoscaler_minimum_is_to_reach" {
  variables {
    target_size      = 0
    awaiting_minimum = true
    members          = []
  }

  assert {
    condition     = output.health.state == "pending" && !output.health.healthy && output.health.reasons == tolist(["NoMembers"])
    error_message = "An autoscaled group created empty grows to its minimum: pending, not scaled to zero."
  }
}

run "row_3_no_members_yet" {
  variables {
    members = []
  }

  assert {
    condition     = output.health.state == "pending" && !output.health.healthy && output.health.reasons == tolist(["NoMembers"])
    error_message = "A group without members is pending, NoMembers."
  }
}

run "row_3_only_deprovisioning_members" {
  variables {
    members = [
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "DEPROVISIONING" },
    ]
  }

  assert {
    condition     = output.health.state == "pending" && length(output.provider_id_list) == 0
    error_message = "A member being deleted is not a member."
  }
}

run "row_4_worst_member_degraded" {
  variables {
    members = [
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "STAGING" },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/workers-k2lp", status = "TERMINATED" },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/workers-z0de", status = "REPAIRING" },
    ]
  }

  assert {
    condition     = output.health.state == "degraded" && !output.health.healthy
    error_message = "degraded is the worst state: it beats stopped and pending."
  }
  assert {
    condition     = output.health.reasons == tolist(["InstanceTerminated:workers-k2lp", "InstanceRepairing:workers-z0de", "InstanceStaging:workers-9xq1"])
    error_message = "reasons name the affected members, then the starting ones."
  }
  assert {
    condition     = [for i in output.instances : i.state] == ["pending", "stopped", "degraded"]
    error_message = "instances carry each member's state."
  }
}

run "row_4_stopped_beats_unknown" {
  variables {
    members = [
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "RUNNING" },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/workers-k2lp", status = "SUSPENDED" },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/workers-z0de", status = "SOMETHING_NEW" },
    ]
  }

  assert {
    condition     = output.health.state == "stopped" && [for i in output.instances : i.state] == ["running", "stopped", "unknown"]
    error_message = "stopped beats unknown; a status the module does not know is unknown."
  }
  assert {
    condition     = output.health.reasons == tolist(["InstanceSuspended:workers-k2lp", "UnknownState:workers-z0de"])
    error_message = "An unknown status is UnknownState."
  }
}

run "row_4_unknown_and_scaling" {
  variables {
    target_size = 4
    members = [
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = null },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/workers-k2lp", status = "RUNNING" },
    ]
  }

  assert {
    condition     = output.health.state == "unknown" && output.health.reasons == tolist(["UnknownState:workers-9xq1", "ScalingInProgress"])
    error_message = "A member without a status is unknown; ScalingInProgress while the count differs from the target size."
  }
}

run "row_5_starting_member" {
  variables {
    members = [
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "RUNNING" },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/workers-k2lp", status = "RUNNING" },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/workers-z0de", status = "PROVISIONING" },
    ]
  }

  assert {
    condition     = output.health.state == "running" && !output.health.healthy && output.health.reasons == tolist(["InstanceProvisioning:workers-z0de"])
    error_message = "A starting member leaves the pool running, not healthy, and never makes it pending."
  }
}

run "row_5_scaling" {
  variables {
    target_size = 5
  }

  assert {
    condition     = output.health.state == "running" && !output.health.healthy && output.health.reasons == tolist(["ScalingInProgress"])
    error_message = "Running members short of the target size are running, not healthy, ScalingInProgress."
  }
}

run "stopped_members_stay_members" {
  variables {
    members = [
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "RUNNING" },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/workers-k2lp", status = "DEPROVISIONING" },
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/workers-z0de", status = "TERMINATED" },
    ]
  }

  assert {
    condition = output.provider_id_list == tolist([
      "gce://captf-test/us-central1-a/workers-9xq1",
      "gce://captf-test/us-central1-c/workers-z0de",
    ])
    error_message = "A DEPROVISIONING member leaves provider_id_list; a stopped (TERMINATED) one stays."
  }
  assert {
    condition     = length(output.instances) == 2 && output.health.state == "stopped"
    error_message = "instances list the same members; the stopped one makes the pool stopped."
  }
}

run "duplicates_and_foreign_urls" {
  variables {
    target_size = 1
    members = [
      { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "RUNNING" },
      { instance = "projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "RUNNING" },
      { instance = "not-an-instance-url", status = "RUNNING" },
    ]
  }

  assert {
    condition     = output.provider_id_list == tolist(["gce://captf-test/us-central1-a/workers-9xq1"]) && output.health.healthy
    error_message = "provider_id_list holds each member once and ignores what is not an instance URL."
  }
}

run "lowercase_status" {
  variables {
    target_size = 1
    members = [
      { instance = "projects/captf-test/zones/us-central1-a/instances/workers-9xq1", status = "running" },
    ]
  }

  assert {
    condition     = output.health.healthy && output.instances[0].state == "running"
    error_message = "Statuses are matched regardless of case."
  }
}
