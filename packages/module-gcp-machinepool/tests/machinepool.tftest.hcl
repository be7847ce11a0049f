# The pool module with a mocked Google provider: nothing reaches GCP. Runs
# share one state, in order, like successive applies of one
# TerraformMachinePool; plan-only runs come last. Needs the hashicorp/google
# 8.5.0 provider for its schema: `tofu init && tofu test` (README).
#
# A mock plans no replacement (it knows no ForceNew), so "kept" below means
# the same ID; a new image is the evidence of a new template, since every
# template argument forces one. The "group no longer exists" health row
# needs a refresh that drops the group; modules/membership/tests covers it.

mock_provider "google" {
  mock_resource "google_compute_region_instance_group_manager" {
    defaults = {
      id                        = "projects/captf-test/regions/us-central1/instanceGroupManagers/captf-team-a-demo-workers-f436199e"
      instance_group            = "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/instanceGroups/captf-team-a-demo-workers-f436199e"
      instance_group_manager_id = 4242424242
    }
  }

  mock_resource "google_compute_region_instance_template" {
    defaults = {
      id        = "projects/captf-test/regions/us-central1/instanceTemplates/captf-team-a-demo-workers-f436199e-0001"
      self_link = "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/instanceTemplates/captf-team-a-demo-workers-f436199e-0001"
    }
  }

  mock_resource "google_compute_region_autoscaler" {
    defaults = {
      id = "projects/captf-test/regions/us-central1/autoscalers/captf-team-a-demo-workers-f436199e"
    }
  }

  mock_data "google_compute_region_instance_group" {
    defaults = {
      instances = [
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/captf-team-a-demo-workers-f436199e-k2lp", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-9xq1", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/captf-team-a-demo-workers-f436199e-z0de", status = "RUNNING", named_ports = [] },
      ]
    }
  }
}

variables {
  captf_contract = "v1alpha1"
  captf_cluster  = { name = "demo", namespace = "team-a" }
  captf_object   = { kind = "TerraformMachinePool", name = "demo-workers", namespace = "team-a" }
  captf_tags = {
    "captf.io/cluster"    = "demo"
    "captf.io/namespace"  = "team-a"
    "captf.io/kind"       = "TerraformMachinePool"
    "captf.io/name"       = "demo-workers"
    "captf.io/managed-by" = "captf"
    "captf.io/template"   = ""
  }
  captf_cluster_outputs = {
    schema     = "captf.io/gcp-cluster/v1"
    project    = "captf-test"
    region     = "us-central1"
    subnetwork = "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/subnetworks/captf-nodes"
    failure_domains = {
      "us-central1-a" = { zone = "us-central1-a" }
      "us-central1-b" = { zone = "us-central1-b" }
      "us-central1-c" = { zone = "us-central1-c" }
      "us-central1-f" = { zone = "us-central1-f" }
    }
    worker = {
      service_account = "captf-demo-wk@captf-test.iam.gserviceaccount.com"
      network_tags    = ["captf-demo-node", "captf-demo-worker"]
    }
  }
  machinepool_name = "demo-workers"
  replicas         = 3
  # "## template: jinja\n#cloud-config\nruncmd: [kubeadm join]\n"
  bootstrap_data          = "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luXQo="
  bootstrap_format        = "cloud-config"
  failure_domains         = []
  cluster_failure_domains = ["us-central1-a", "us-central1-b", "us-central1-c"]
  kubernetes_version      = "v1.33.4"
  node_labels             = {}
  autoscaling             = { enabled = false, min = 0, max = 0 }

  image = "projects/my-images/global/images/capi-ubuntu-2404-{slug}"
}

run "happy_path" {
  assert {
    condition     = output.provider_id == "projects/captf-test/regions/us-central1/instanceGroupManagers/captf-team-a-demo-workers-f436199e" && output.provider_id == google_compute_region_instance_group_manager.pool_instance_group_manager[0].id
    error_message = "provider_id is the group's ID, projects/<p>/regions/<r>/instanceGroupManagers/<name>."
  }
  assert {
    condition = output.provider_id_list == tolist([
      "gce://captf-test/us-central1-a/captf-team-a-demo-workers-f436199e-9xq1",
      "gce://captf-test/us-central1-b/captf-team-a-demo-workers-f436199e-k2lp",
      "gce://captf-test/us-central1-c/captf-team-a-demo-workers-f436199e-z0de",
    ])
    error_message = "provider_id_list is gce://<project>/<zone>/<instance> of every member, sorted."
  }
  assert {
    condition     = output.replicas == 3 && google_compute_region_instance_group_manager.pool_instance_group_manager[0].target_size == 3
    error_message = "Without autoscaling replicas is the group's target size."
  }
  assert {
    condition     = length(output.instances) == 3 && output.instances[0].provider_id == output.provider_id_list[0] && output.instances[0].instance_id == "captf-team-a-demo-workers-f436199e-9xq1" && output.instances[0].failure_domain == "us-central1-a" && output.instances[0].state == "running" && length(output.instances[0].addresses) == 0
    error_message = "instances describe every member, in provider ID order, without addresses."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy && length(output.health.reasons) == 0
    error_message = "Every member running at the target size is running and healthy."
  }
  assert {
    condition     = google_compute_region_instance_group_manager.pool_instance_group_manager[0].name == "captf-team-a-demo-workers-f436199e" && google_compute_region_instance_group_manager.pool_instance_group_manager[0].base_instance_name == "captf-team-a-demo-workers-f436199e"
    error_message = "The group and its instances are named after the pool."
  }
  assert {
    condition     = google_compute_region_instance_group_manager.pool_instance_group_manager[0].distribution_policy_zones == toset(["us-central1-a", "us-central1-b", "us-central1-c"])
    error_message = "Without failure_domains the group spreads over the cluster's zones."
  }
  assert {
    condition = alltrue([
      google_compute_region_instance_group_manager.pool_instance_group_manager[0].update_policy[0].type == "PROACTIVE",
      google_compute_region_instance_group_manager.pool_instance_group_manager[0].update_policy[0].minimal_action == "REFRESH",
      google_compute_region_instance_group_manager.pool_instance_group_manager[0].update_policy[0].most_disruptive_allowed_action == "REPLACE",
      google_compute_region_instance_group_manager.pool_instance_group_manager[0].update_policy[0].max_surge_fixed == 3,
      google_compute_region_instance_group_manager.pool_instance_group_manager[0].update_policy[0].max_unavailable_fixed == 0,
    ])
    error_message = "Updates are proactive: refresh in place, replace with one surge instance per zone and none unavailable."
  }
  assert {
    condition     = google_compute_region_instance_group_manager.pool_instance_group_manager[0].version[0].instance_template == google_compute_region_instance_template.pool_instance_template.self_link
    error_message = "The group runs the current template."
  }
  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.disk[0].source_image == "projects/my-images/global/images/capi-ubuntu-2404-v1-33-4"
    error_message = "{slug} becomes v1-33-4."
  }
  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.service_account[0].email == "captf-demo-wk@captf-test.iam.gserviceaccount.com" && google_compute_region_instance_template.pool_instance_template.tags == toset(["captf-demo-node", "captf-demo-worker"])
    error_message = "Pool instances are workers: the worker service account and network tags."
  }
  assert {
    condition = alltrue([
      google_compute_region_instance_template.pool_instance_template.metadata["block-project-ssh-keys"] == "TRUE",
      google_compute_region_instance_template.pool_instance_template.metadata["enable-oslogin"] == "TRUE",
      google_compute_region_instance_template.pool_instance_template.metadata["serial-port-enable"] == "FALSE",
      !contains(keys(google_compute_region_instance_template.pool_instance_template.metadata), "user-data"),
    ])
    error_message = "The template holds OS Login, blocked project keys, no serial console, and never the bootstrap data."
  }
  assert {
    condition     = length(google_compute_region_instance_template.pool_instance_template.network_interface[0].access_config) == 0 && google_compute_region_instance_template.pool_instance_template.shielded_instance_config[0].enable_secure_boot && google_compute_region_instance_template.pool_instance_template.scheduling[0].provisioning_model == "STANDARD"
    error_message = "No external address, Shielded VM with Secure Boot, standard VMs."
  }
  assert {
    condition     = nonsensitive(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data"]) == var.bootstrap_data && google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data-encoding"] == "base64"
    error_message = "cloud-config without labels goes as it is, base64, in the all-instances config."
  }
  assert {
    condition = google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].labels == tomap({
      "captf-io_cluster"    = "demo"
      "captf-io_namespace"  = "team-a"
      "captf-io_kind"       = "terraformmachinepool"
      "captf-io_name"       = "demo-workers"
      "captf-io_managed-by" = "captf"
      "captf-io_template"   = ""
    })
    error_message = "Every instance carries captf_tags as GCP labels."
  }
  assert {
    condition     = length(google_compute_region_autoscaler.pool_autoscaler) == 0 && output.autoscaler_id == null
    error_message = "Without autoscaling there is no autoscaler."
  }
  assert {
    condition     = output.instance_group_manager_id == 4242424242 && length(output.dropped_node_labels) == 0
    error_message = "The extra outputs describe the group."
  }
}

run "reapply_is_stable" {
  variables {
    previous_template_id = run.happy_path.instance_template_id
    previous_provider_id = run.happy_path.provider_id
  }

  assert {
    condition     = output.instance_template_id == var.previous_template_id && output.provider_id == var.previous_provider_id
    error_message = "A second identical apply keeps the template and the group."
  }
}

run "bootstrap_rotation_in_place" {
  variables {
    # "## template: jinja\n#cloud-config\nruncmd: [kubeadm join 2]\n"
    bootstrap_data       = "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luIDJdCg=="
    previous_template_id = run.reapply_is_stable.instance_template_id
  }

  assert {
    condition     = output.instance_template_id == var.previous_template_id && google_compute_region_instance_template.pool_instance_template.disk[0].source_image == "projects/my-images/global/images/capi-ubuntu-2404-v1-33-4"
    error_message = "A token rotation keeps the template: nothing rolls."
  }
  assert {
    condition     = nonsensitive(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data"]) == "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luIDJdCg=="
    error_message = "The rotated data reaches the all-instances config, for new instances."
  }
}

run "kubernetes_version_rolls" {
  variables {
    kubernetes_version   = "v1.34.1"
    bootstrap_data       = "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luIDJdCg=="
    previous_provider_id = run.bootstrap_rotation_in_place.provider_id
  }

  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.disk[0].source_image == "projects/my-images/global/images/capi-ubuntu-2404-v1-34-1"
    error_message = "A version change changes the image, so a new template, which the group rolls to."
  }
  assert {
    condition     = output.provider_id == var.previous_provider_id
    error_message = "The group itself is kept: it replaces its instances."
  }
}

run "labels_in_place" {
  variables {
    kubernetes_version = "v1.34.1"
    additional_tags    = { team = "platform" }
    captf_tags = {
      "captf.io/cluster"    = "demo"
      "captf.io/namespace"  = "team-a"
      "captf.io/kind"       = "TerraformMachinePool"
      "captf.io/name"       = "demo-workers"
      "captf.io/managed-by" = "captf"
      "captf.io/template"   = "Workers.Template-2"
    }
    previous_template_id = run.kubernetes_version_rolls.instance_template_id
  }

  assert {
    condition = google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].labels == tomap({
      "captf-io_cluster"    = "demo"
      "captf-io_namespace"  = "team-a"
      "captf-io_kind"       = "terraformmachinepool"
      "captf-io_name"       = "demo-workers"
      "captf-io_managed-by" = "captf"
      "captf-io_template"   = "workers_template-2"
      "team"                = "platform"
    })
    error_message = "The all-instances config relabels every instance in place: captf_tags mapped to GCP labels, and additional_tags."
  }
  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.labels["captf-io_template"] == "" && !contains(keys(google_compute_region_instance_template.pool_instance_template.labels), "team")
    error_message = "The template keeps the labels of its creation: its labels force a new template."
  }
  assert {
    condition     = output.instance_template_id == var.previous_template_id
    error_message = "A label change keeps the template, so it rolls nothing."
  }
}

run "node_labels_multipart" {
  variables {
    kubernetes_version = "v1.34.1"
    node_labels = {
      "tier"                           = "batch"
      "team.example.com/owner"         = "platform"
      "node.kubernetes.io/pool"        = "workers"
      "node-role.kubernetes.io/worker" = ""
    }
    previous_template_id = run.labels_in_place.instance_template_id
  }

  assert {
    condition     = output.instance_template_id == var.previous_template_id
    error_message = "A node_labels change touches the all-instances metadata only."
  }
  assert {
    condition     = startswith(base64decode(nonsensitive(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data"])), "Content-Type: multipart/mixed; boundary=\"captf-boundary-f436199e\"\n")
    error_message = "With labels to register the user-data is a MIME multipart message."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data"])), "Content-Type: text/cloud-boothook") && strcontains(base64decode(nonsensitive(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data"])), "captf_node_labels='node.kubernetes.io/pool=workers,team.example.com/owner=platform,tier=batch'")
    error_message = "The boothook registers the labels the kubelet may set, sorted."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data"])), "Content-Type: text/plain; charset=\"utf-8\"\nMIME-Version: 1.0\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment; filename=\"captf-bootstrap-data\"\n\n${var.bootstrap_data}\n")
    error_message = "The bootstrap data follows unchanged, as a base64 part."
  }
  assert {
    condition     = google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data-encoding"] == "base64"
    error_message = "The message goes base64."
  }
  assert {
    condition     = output.dropped_node_labels == tolist(["node-role.kubernetes.io/worker"])
    error_message = "A label the kubelet may not set is dropped and reported."
  }
}

run "node_labels_gzipped_payload" {
  variables {
    kubernetes_version = "v1.34.1"
    # gzip of "#cloud-config\n"
    bootstrap_data = "H4sIAAAAAAAAA1NOzskvTdFNzs9Ly0znAgAFVrO4DgAAAA=="
    node_labels    = { tier = "batch" }
  }

  assert {
    condition     = strcontains(base64decode(nonsensitive(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data"])), "Content-Type: application/x-gzip\n")
    error_message = "Gzipped data is an application/x-gzip part, which cloud-init decompresses."
  }
}

run "bootstrap_ignition" {
  variables {
    kubernetes_version = "v1.34.1"
    bootstrap_format   = "ignition"
    # {"ignition":{"version":"3.4.0"}}
    bootstrap_data = "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0="
    # Only a label the kubelet may not set: nothing to register.
    node_labels = { "node-role.kubernetes.io/worker" = "" }
  }

  assert {
    condition     = nonsensitive(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata["user-data"]) == "{\"ignition\":{\"version\":\"3.4.0\"}}"
    error_message = "Ignition reads user-data as it is, so it goes decoded."
  }
  assert {
    condition     = !contains(keys(google_compute_region_instance_group_manager.pool_instance_group_manager[0].all_instances_config[0].metadata), "user-data-encoding")
    error_message = "Ignition user-data has no user-data-encoding."
  }
}

run "autoscaling_disabled" {
  variables {
    kubernetes_version = "v1.34.1"
    replicas           = 2
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = [
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-9xq1", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/captf-team-a-demo-workers-f436199e-k2lp", status = "RUNNING", named_ports = [] },
      ]
    }
  }

  assert {
    condition     = google_compute_region_instance_group_manager.pool_instance_group_manager[0].target_size == 2 && output.replicas == 2
    error_message = "Without autoscaling replicas sets the target size, and replicas reports it."
  }
  assert {
    condition     = length(google_compute_region_autoscaler.pool_autoscaler) == 0 && output.autoscaler_id == null
    error_message = "Without autoscaling there is no autoscaler."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy
    error_message = "Two running members at a target size of two is healthy."
  }
}

run "autoscaling_enabled" {
  variables {
    kubernetes_version = "v1.34.1"
    replicas           = 5
    autoscaling        = { enabled = true, min = 1, max = 10 }
  }

  # The autoscaler chose 4: a refresh reads it from the group.
  override_resource {
    target = google_compute_region_instance_group_manager.pool_instance_group_manager
    values = {
      id                        = "projects/captf-test/regions/us-central1/instanceGroupManagers/captf-team-a-demo-workers-f436199e"
      instance_group            = "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/instanceGroups/captf-team-a-demo-workers-f436199e"
      instance_group_manager_id = 4242424242
      target_size               = 4
    }
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = [
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-9xq1", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/captf-team-a-demo-workers-f436199e-k2lp", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/captf-team-a-demo-workers-f436199e-z0de", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-w8rt", status = "RUNNING", named_ports = [] },
      ]
    }
  }

  assert {
    condition     = length(google_compute_region_autoscaler.pool_autoscaler) == 1 && google_compute_region_autoscaler.pool_autoscaler[0].autoscaling_policy[0].min_replicas == 1 && google_compute_region_autoscaler.pool_autoscaler[0].autoscaling_policy[0].max_replicas == 10
    error_message = "The autoscaler takes min and max from the MachinePool's annotations."
  }
  assert {
    condition     = google_compute_region_autoscaler.pool_autoscaler[0].target == google_compute_region_instance_group_manager.pool_instance_group_manager[0].id && google_compute_region_autoscaler.pool_autoscaler[0].autoscaling_policy[0].cpu_utilization[0].target == 0.6 && google_compute_region_autoscaler.pool_autoscaler[0].autoscaling_policy[0].cooldown_period == 300
    error_message = "The autoscaler scales the group on CPU (60 %), ignoring an instance's first 300 seconds."
  }
  assert {
    condition     = output.replicas == 4 && output.autoscaler_id == google_compute_region_autoscaler.pool_autoscaler[0].id
    error_message = "With autoscaling replicas (5) is ignored: the output reports the autoscaler's target size."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy
    error_message = "Four running members at the autoscaler's four is healthy."
  }
}

run "autoscaling_first_apply_pending" {
  variables {
    kubernetes_version = "v1.34.1"
    autoscaling        = { enabled = true, min = 2, max = 5 }
  }

  # An autoscaled group starts empty, at target size 0, and grows to min.
  override_resource {
    target = google_compute_region_instance_group_manager.pool_instance_group_manager
    values = {
      id                        = "projects/captf-test/regions/us-central1/instanceGroupManagers/captf-team-a-demo-workers-f436199e"
      instance_group            = "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/instanceGroups/captf-team-a-demo-workers-f436199e"
      instance_group_manager_id = 4242424242
      target_size               = 0
    }
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = []
    }
  }

  assert {
    condition     = output.health.state == "pending" && !output.health.healthy && output.health.reasons == tolist(["NoMembers"])
    error_message = "An autoscaled group with a minimum above 0 and no members yet is pending, not scaled to zero."
  }
}

run "autoscaling_off_again" {
  variables {
    kubernetes_version = "v1.34.1"
    replicas           = 3
  }

  assert {
    condition     = length(google_compute_region_autoscaler.pool_autoscaler) == 0 && google_compute_region_instance_group_manager.pool_instance_group_manager[0].target_size == 3 && output.replicas == 3
    error_message = "Turning autoscaling off deletes the autoscaler; replicas is the target size again."
  }
}

run "zero_replicas_healthy" {
  variables {
    kubernetes_version = "v1.34.1"
    replicas           = 0
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = []
    }
  }

  assert {
    condition     = output.replicas == 0 && length(output.provider_id_list) == 0 && length(output.instances) == 0
    error_message = "A group at target size 0 has no members."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy
    error_message = "A group at target size 0 is running and healthy."
  }
}

run "health_pending_without_members" {
  variables {
    kubernetes_version = "v1.34.1"
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = []
    }
  }

  assert {
    condition     = output.health.state == "pending" && !output.health.healthy && output.health.reasons == tolist(["NoMembers"])
    error_message = "A group with no members yet is pending, NoMembers."
  }
}

run "health_worst_member" {
  variables {
    kubernetes_version = "v1.34.1"
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = [
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-9xq1", status = "STAGING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/captf-team-a-demo-workers-f436199e-k2lp", status = "TERMINATED", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/captf-team-a-demo-workers-f436199e-z0de", status = "REPAIRING", named_ports = [] },
      ]
    }
  }

  assert {
    condition     = output.health.state == "degraded" && !output.health.healthy
    error_message = "The pool takes its worst member's state: degraded before stopped."
  }
  assert {
    condition     = output.health.reasons == tolist(["InstanceTerminated:captf-team-a-demo-workers-f436199e-k2lp", "InstanceRepairing:captf-team-a-demo-workers-f436199e-z0de", "InstanceStaging:captf-team-a-demo-workers-f436199e-9xq1"])
    error_message = "reasons name the affected members, then the starting ones."
  }
  assert {
    condition     = [for i in output.instances : i.state] == ["pending", "stopped", "degraded"]
    error_message = "instances carry each member's state."
  }
}

run "health_stopped_and_unknown" {
  variables {
    kubernetes_version = "v1.34.1"
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = [
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-9xq1", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/captf-team-a-demo-workers-f436199e-k2lp", status = "SUSPENDED", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/captf-team-a-demo-workers-f436199e-z0de", status = "SOMETHING_NEW", named_ports = [] },
      ]
    }
  }

  assert {
    condition     = output.health.state == "stopped" && [for i in output.instances : i.state] == ["running", "stopped", "unknown"]
    error_message = "stopped is worse than unknown; a status the module does not know is unknown."
  }
}

run "health_starting_member" {
  variables {
    kubernetes_version = "v1.34.1"
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = [
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-9xq1", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/captf-team-a-demo-workers-f436199e-k2lp", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/captf-team-a-demo-workers-f436199e-z0de", status = "STAGING", named_ports = [] },
      ]
    }
  }

  assert {
    condition     = output.health.state == "running" && !output.health.healthy && output.health.reasons == tolist(["InstanceStaging:captf-team-a-demo-workers-f436199e-z0de"])
    error_message = "A starting member leaves the pool running, not healthy, and never pending."
  }
}

run "health_scaling" {
  variables {
    kubernetes_version = "v1.34.1"
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = [
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-9xq1", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/captf-team-a-demo-workers-f436199e-k2lp", status = "RUNNING", named_ports = [] },
      ]
    }
  }

  assert {
    condition     = output.health.state == "running" && !output.health.healthy && output.health.reasons == tolist(["ScalingInProgress"])
    error_message = "Every member running but fewer than the target size is running, not healthy, ScalingInProgress."
  }
}

run "membership_excludes_deprovisioning" {
  variables {
    kubernetes_version = "v1.34.1"
  }

  override_data {
    target = data.google_compute_region_instance_group.pool_members
    values = {
      instances = [
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-a/instances/captf-team-a-demo-workers-f436199e-9xq1", status = "RUNNING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-b/instances/captf-team-a-demo-workers-f436199e-k2lp", status = "DEPROVISIONING", named_ports = [] },
        { instance = "https://www.googleapis.com/compute/v1/projects/captf-test/zones/us-central1-c/instances/captf-team-a-demo-workers-f436199e-z0de", status = "TERMINATED", named_ports = [] },
      ]
    }
  }

  assert {
    condition = output.provider_id_list == tolist([
      "gce://captf-test/us-central1-a/captf-team-a-demo-workers-f436199e-9xq1",
      "gce://captf-test/us-central1-c/captf-team-a-demo-workers-f436199e-z0de",
    ])
    error_message = "A member being deleted leaves provider_id_list; a stopped (TERMINATED) one stays."
  }
  assert {
    condition     = length(output.instances) == 2
    error_message = "instances list the same members."
  }
}

run "cluster_zone_change_keeps_the_zones" {
  variables {
    kubernetes_version      = "v1.34.1"
    cluster_failure_domains = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"]
    previous_provider_id    = run.membership_excludes_deprovisioning.provider_id
  }

  assert {
    condition     = google_compute_region_instance_group_manager.pool_instance_group_manager[0].distribution_policy_zones == toset(["us-central1-a", "us-central1-b", "us-central1-c"]) && output.provider_id == var.previous_provider_id
    error_message = "A pool without failure_domains keeps the cluster's zones of its first apply."
  }
}

run "failure_domains_requested" {
  variables {
    kubernetes_version = "v1.34.1"
    failure_domains    = ["us-central1-f"]
  }

  assert {
    condition     = google_compute_region_instance_group_manager.pool_instance_group_manager[0].distribution_policy_zones == toset(["us-central1-f"]) && google_compute_region_instance_group_manager.pool_instance_group_manager[0].update_policy[0].max_surge_fixed == 1
    error_message = "failure_domains set the group's zones, and one surge instance per zone."
  }
}

# Plan-only runs: they leave the state alone.

run "spot_pool" {
  command = plan

  variables {
    spot = true
  }

  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.scheduling[0].provisioning_model == "SPOT" && google_compute_region_instance_template.pool_instance_template.scheduling[0].instance_termination_action == "STOP" && !google_compute_region_instance_template.pool_instance_template.scheduling[0].automatic_restart
    error_message = "spot makes Spot VMs that stop when preempted."
  }
}

run "boot_disk_kms_key" {
  command = plan

  variables {
    boot_disk_kms_key_id = "projects/captf-test/locations/us-central1/keyRings/nodes/cryptoKeys/disks"
  }

  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.disk[0].disk_encryption_key[0].kms_key_self_link == "projects/captf-test/locations/us-central1/keyRings/nodes/cryptoKeys/disks"
    error_message = "boot_disk_kms_key_id encrypts the boot disks."
  }
}

# The pool was first applied in captf-test: external exports elsewhere would
# move it, which rejects_exports_moving_the_pool_* refuse.
run "externally_managed_with_exports" {
  command = plan

  variables {
    captf_cluster_outputs = {}
    external_cluster_exports = {
      schema     = "captf.io/gcp-cluster/v1"
      project    = "captf-test"
      region     = "us-central1"
      subnetwork = "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/subnetworks/external-nodes"
      failure_domains = {
        "us-central1-a" = { zone = "us-central1-a" }
      }
      worker = {
        service_account = "wk@captf-test.iam.gserviceaccount.com"
        network_tags    = ["other-node"]
      }
    }
  }

  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.network_interface[0].subnetwork == "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/subnetworks/external-nodes" && google_compute_region_instance_template.pool_instance_template.project == "captf-test"
    error_message = "external_cluster_exports stands in for the exports of an externally managed cluster."
  }
}

run "kubernetes_version_suffix_uses_fullslug" {
  command = plan

  variables {
    image              = "projects/my-images/global/images/rke2-ubuntu-2404-{fullslug}"
    kubernetes_version = "v1.31.4+rke2r2"
  }

  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.disk[0].source_image == "projects/my-images/global/images/rke2-ubuntu-2404-v1-31-4-rke2r2"
    error_message = "{fullslug} keeps the +rke2rN suffix, so a suffix-only upgrade changes the image."
  }
}

run "image_placeholders" {
  command = plan

  variables {
    image = "projects/my-images/global/images/capi-{version}-{semver}-{slug}"
  }

  assert {
    condition     = google_compute_region_instance_template.pool_instance_template.disk[0].source_image == "projects/my-images/global/images/capi-v1.33.4-1.33.4-v1-33-4"
    error_message = "{version}, {semver} and {slug} become v1.33.4, 1.33.4 and v1-33-4."
  }
}

run "autoscaling_max_zero" {
  command = plan

  variables {
    replicas    = 0
    autoscaling = { enabled = true, min = 0, max = 0 }
  }

  assert {
    condition     = length(google_compute_region_autoscaler.pool_autoscaler) == 0 && google_compute_region_instance_group_manager.pool_instance_group_manager[0].target_size == 0
    error_message = "A maximum of 0 means no autoscaler and a target size of 0."
  }
}

run "rejects_image_without_placeholder" {
  command = plan

  variables {
    image = "projects/my-images/global/images/family/capi-ubuntu-2404"
  }

  expect_failures = [google_compute_region_instance_template.pool_instance_template]
}

run "rejects_placeholder_without_version" {
  command = plan

  variables {
    kubernetes_version = null
  }

  expect_failures = [google_compute_region_instance_template.pool_instance_template]
}

run "rejects_suffixed_version_without_fullslug" {
  command = plan

  variables {
    kubernetes_version = "v1.31.4+rke2r2"
  }

  expect_failures = [google_compute_region_instance_template.pool_instance_template]
}

run "rejects_ignition_with_labels" {
  command = plan

  variables {
    bootstrap_format = "ignition"
    bootstrap_data   = "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0="
    node_labels      = { tier = "batch" }
  }

  expect_failures = [google_compute_region_instance_group_manager.pool_instance_group_manager]
}

run "rejects_gzipped_ignition" {
  command = plan

  variables {
    bootstrap_format = "ignition"
    # gzip of {"ignition":{"version":"3.4.0"}}
    bootstrap_data = "H4sIAAAAAAAAA6tWykzPyyzJzM9TsqpWKkstKgYzlYz1TPQMlGprAWys13sgAAAA"
  }

  expect_failures = [google_compute_region_instance_group_manager.pool_instance_group_manager]
}

run "rejects_oversized_user_data" {
  command = plan

  variables {
    # 262148 base64 characters: 4 bytes over 256 KB.
    bootstrap_data = format("%0262148d", 0)
  }

  expect_failures = [google_compute_region_instance_group_manager.pool_instance_group_manager]
}

run "rejects_failure_domain_outside_the_cluster" {
  command = plan

  variables {
    failure_domains = ["us-east1-b"]
  }

  expect_failures = [google_compute_region_instance_group_manager.pool_instance_group_manager]
}

run "rejects_externally_managed_without_exports" {
  command = plan

  variables {
    captf_cluster_outputs = {}
  }

  expect_failures = [google_compute_region_instance_template.pool_instance_template]
}

run "rejects_exports_moving_the_pool_to_another_project" {
  command = plan

  variables {
    captf_cluster_outputs = {
      schema     = "captf.io/gcp-cluster/v1"
      project    = "captf-moved"
      region     = "us-central1"
      subnetwork = "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/subnetworks/captf-nodes"
      failure_domains = {
        "us-central1-a" = { zone = "us-central1-a" }
        "us-central1-b" = { zone = "us-central1-b" }
        "us-central1-c" = { zone = "us-central1-c" }
        "us-central1-f" = { zone = "us-central1-f" }
      }
      worker = {
        service_account = "captf-demo-wk@captf-test.iam.gserviceaccount.com"
        network_tags    = ["captf-demo-node", "captf-demo-worker"]
      }
    }
  }

  expect_failures = [google_compute_region_instance_group_manager.pool_instance_group_manager]
}

run "rejects_exports_moving_the_pool_to_another_region" {
  command = plan

  variables {
    captf_cluster_outputs = {
      schema     = "captf.io/gcp-cluster/v1"
      project    = "captf-test"
      region     = "us-east1"
      subnetwork = "https://www.googleapis.com/compute/v1/projects/captf-test/regions/us-central1/subnetworks/captf-nodes"
      failure_domains = {
        "us-central1-a" = { zone = "us-central1-a" }
        "us-central1-b" = { zone = "us-central1-b" }
        "us-central1-c" = { zone = "us-central1-c" }
        "us-central1-f" = { zone = "us-central1-f" }
      }
      worker = {
        service_account = "captf-demo-wk@captf-test.iam.gserviceaccount.com"
        network_tags    = ["captf-demo-node", "captf-demo-worker"]
      }
    }
  }

  expect_failures = [google_compute_region_instance_group_manager.pool_instance_group_manager]
}

run "rejects_replicas_over_500" {
  command = plan

  variables {
    replicas = 501
  }

  expect_failures = [google_compute_region_instance_group_manager.pool_instance_group_manager]
}

run "rejects_autoscaling_max_over_500" {
  command = plan

  variables {
    autoscaling = { enabled = true, min = 1, max = 600 }
  }

  expect_failures = [google_compute_region_instance_group_manager.pool_instance_group_manager]
}

# Variable validations, one run each.

run "invalid_captf_contract" {
  command = plan
  variables {
    captf_contract = "v1alpha2"
  }
  expect_failures = [var.captf_contract]
}

run "invalid_captf_cluster_outputs" {
  command = plan
  variables {
    captf_cluster_outputs = { schema = "captf.io/azure-cluster/v1" }
  }
  expect_failures = [google_compute_region_instance_template.pool_instance_template]
}

run "invalid_replicas" {
  command = plan
  variables {
    replicas = 1.5
  }
  expect_failures = [var.replicas]
}

run "invalid_bootstrap_data" {
  command = plan
  variables {
    bootstrap_data = "not base64!"
  }
  expect_failures = [var.bootstrap_data]
}

run "invalid_bootstrap_format" {
  command = plan
  variables {
    bootstrap_format = "shell"
  }
  expect_failures = [var.bootstrap_format]
}

run "invalid_node_labels" {
  command = plan
  variables {
    node_labels = { tier = "batch; reboot" }
  }
  expect_failures = [var.node_labels]
}

run "invalid_autoscaling" {
  command = plan
  variables {
    autoscaling = { enabled = true, min = 4, max = 2 }
  }
  expect_failures = [var.autoscaling]
}

run "invalid_additional_network_tags" {
  command = plan
  variables {
    additional_network_tags = ["-bad"]
  }
  expect_failures = [var.additional_network_tags]
}

run "invalid_additional_tags_count" {
  command = plan
  variables {
    additional_tags = { for i in range(59) : "k${i}" => "v" }
  }
  expect_failures = [var.additional_tags]
}

run "invalid_additional_tags_syntax" {
  command = plan
  variables {
    additional_tags = { "Team" = "x" }
  }
  expect_failures = [var.additional_tags]
}

run "invalid_additional_tags_reserved" {
  command = plan
  variables {
    additional_tags = { "captf-io_name" = "x" }
  }
  expect_failures = [var.additional_tags]
}

run "invalid_autoscaling_initialization_seconds" {
  command = plan
  variables {
    autoscaling_initialization_seconds = -1
  }
  expect_failures = [var.autoscaling_initialization_seconds]
}

run "invalid_autoscaling_target_cpu_percent" {
  command = plan
  variables {
    autoscaling_target_cpu_percent = 150
  }
  expect_failures = [var.autoscaling_target_cpu_percent]
}

run "invalid_boot_disk_kms_key_id" {
  command = plan
  variables {
    boot_disk_kms_key_id = "my-key"
  }
  expect_failures = [var.boot_disk_kms_key_id]
}

run "invalid_boot_disk_size_gib" {
  command = plan
  variables {
    boot_disk_size_gib = 9
  }
  expect_failures = [var.boot_disk_size_gib]
}

run "invalid_boot_disk_type" {
  command = plan
  variables {
    boot_disk_type = "standard"
  }
  expect_failures = [var.boot_disk_type]
}

run "invalid_external_cluster_exports" {
  command = plan
  variables {
    external_cluster_exports = { project = "captf-test" }
  }
  expect_failures = [var.external_cluster_exports]
}

run "invalid_image_missing" {
  command = plan
  variables {
    image = null
  }
  expect_failures = [var.image]
}

run "invalid_image_whitespace" {
  command = plan
  variables {
    image = "my image-{slug}"
  }
  expect_failures = [var.image]
}

run "invalid_machine_type" {
  command = plan
  variables {
    machine_type = "big"
  }
  expect_failures = [var.machine_type]
}
