# The pool module with a mocked azurerm provider: nothing reaches Azure. Runs
# share one state, in order, like successive applies of one
# TerraformMachinePool; plan-only runs come last. Needs the hashicorp/azurerm
# 5.7.0 provider for its schema: `tofu init && tofu test` (README).
#
# A mock plans no replacement (it knows no ForceNew), so a new generation
# shows as a new scale set name. The "scale set gone" health row needs a
# refresh that drops the scale set; modules/membership/tests covers it.

mock_provider "azurerm" {
  # IDs that other arguments take are in ARM form: the provider validates
  # them even when mocked.
  mock_resource "azurerm_linux_virtual_machine_scale_set" {
    defaults = {
      id = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Compute/virtualMachineScaleSets/workers-a8a3599f"
    }
  }

  mock_resource "azurerm_monitor_autoscale_setting" {
    defaults = {
      id = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Insights/autoScaleSettings/workers-a8a3599f-autoscale"
    }
  }

  # The listing finds the scale set (Azure may report the group's name in
  # another case) and the instance read reports three running instances,
  # unless a run overrides them.
  mock_data "azurerm_resources" {
    defaults = {
      resources = [{
        id                  = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/captf-demo-rg/providers/Microsoft.Compute/virtualMachineScaleSets/workers-a8a3599f"
        location            = "westeurope"
        name                = "workers-a8a3599f"
        resource_group_name = "captf-demo-rg"
        tags                = {}
        type                = "Microsoft.Compute/virtualMachineScaleSets"
      }]
    }
  }

  mock_data "azurerm_virtual_machine_scale_set" {
    defaults = {
      instances = [
        { computer_name = "workers-a8a3599f000000", instance_id = "0", latest_model_applied = true, name = "workers-a8a3599f_0", power_state = "running", private_ip_address = "10.0.1.4", private_ip_addresses = ["10.0.1.4"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d20", zone = "1" },
        { computer_name = "workers-a8a3599f000001", instance_id = "1", latest_model_applied = true, name = "workers-a8a3599f_1", power_state = "running", private_ip_address = "10.0.1.5", private_ip_addresses = ["10.0.1.5"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d21", zone = "2" },
        { computer_name = "workers-a8a3599f000002", instance_id = "2", latest_model_applied = true, name = "workers-a8a3599f_2", power_state = "running", private_ip_address = "10.0.1.6", private_ip_addresses = ["10.0.1.6"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d22", zone = "3" },
      ]
    }
  }
}

variables {
  captf_contract = "v1alpha1"
  captf_cluster  = { name = "demo", namespace = "team-a" }
  captf_object   = { kind = "TerraformMachinePool", name = "workers", namespace = "team-a" }
  captf_tags = {
    "captf.io/cluster"    = "demo"
    "captf.io/namespace"  = "team-a"
    "captf.io/kind"       = "TerraformMachinePool"
    "captf.io/name"       = "workers"
    "captf.io/managed-by" = "captf"
    "captf.io/template"   = ""
  }
  captf_cluster_outputs = {
    schema               = "captf.io/azure-cluster/v1"
    subscription_id      = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
    region               = "westeurope"
    resource_group_name  = "Captf-Demo-RG"
    failure_domains      = { "1" = {}, "2" = {}, "3" = {} }
    worker_subnet_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/network/providers/Microsoft.Network/virtualNetworks/hub/subnets/workers"
    admin_username       = "captf"
    admin_ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFwmVs7I+fRG7p9REDAqtzqYFaBpxTIY7aDgzqMbcYHf captf@example"
    worker = {
      identity_id                   = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.ManagedIdentity/userAssignedIdentities/captf-demo-worker"
      identity_client_id            = "7a4b9c7d-2e8f-4a3b-9c4d-7e8f9a0b1c2d"
      network_security_group_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/networkSecurityGroups/captf-demo-worker-nsg"
      application_security_group_id = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/applicationSecurityGroups/captf-demo-worker-asg"
    }
    cloud_provider_config = {
      cloud          = "AzurePublicCloud"
      tenantId       = "72f988bf-86f1-41af-91ab-2d7cd011db47"
      subscriptionId = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
      resourceGroup  = "Captf-Demo-RG"
      location       = "westeurope"
      vmType         = "vmss"
    }
  }
  machinepool_name = "workers"
  # "## template: jinja\n#cloud-config\nruncmd: [kubeadm join]\n"
  bootstrap_data          = "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luXQo="
  bootstrap_format        = "cloud-config"
  failure_domains         = []
  cluster_failure_domains = ["1", "2", "3"]
  kubernetes_version      = "v1.34.1"
  node_labels             = {}
  autoscaling             = { enabled = false, min = 0, max = 0 }

  image_id = "/communityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/images/capi-ubun2-2404/versions/{semver}"
  replicas = 3
}

run "happy_path" {
  assert {
    condition     = output.provider_id == "azure:///subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/captf-demo-rg/providers/Microsoft.Compute/virtualMachineScaleSets/workers-a8a3599f"
    error_message = "provider_id is azure:// and the scale set's ARM ID, with the resource group lowercase."
  }
  assert {
    condition = output.provider_id_list == tolist([
      "${output.provider_id}/virtualMachines/0",
      "${output.provider_id}/virtualMachines/1",
      "${output.provider_id}/virtualMachines/2",
    ])
    error_message = "provider_id_list is <provider_id>/virtualMachines/<instance ID> of every instance, sorted."
  }
  assert {
    condition     = output.replicas == 3 && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].instances == 3
    error_message = "replicas is the scale set's capacity."
  }
  assert {
    condition     = length(output.instances) == 3 && output.instances[0].provider_id == output.provider_id_list[0] && output.instances[0].instance_id == "0" && output.instances[0].failure_domain == "1" && output.instances[0].state == "running"
    error_message = "instances describe every instance."
  }
  assert {
    condition     = jsonencode(output.instances[1].addresses) == jsonencode([{ type = "InternalIP", address = "10.0.1.5" }, { type = "Hostname", address = "workers-a8a3599f000001" }])
    error_message = "An instance's addresses are its private address and its hostname."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy && length(output.health.reasons) == 0
    error_message = "Three running instances at a capacity of three are running and healthy."
  }
  assert {
    condition     = output.scale_set_name == "workers-a8a3599f" && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].computer_name_prefix == "workers-a8a3599f"
    error_message = "The scale set and its hostnames are <machinepool_name>-<generation hash>."
  }
  assert {
    condition     = output.scale_set_id == azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].id && output.autoscale_setting_id == azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].id && length(output.dropped_node_labels) == 0
    error_message = "The extra outputs name the scale set and its autoscale setting."
  }
  assert {
    condition     = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].upgrade_mode == "Manual" && !azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].overprovision && !azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].single_placement_group && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].priority == "Regular"
    error_message = "A manual, not overprovisioned scale set without a single placement group."
  }
  assert {
    condition     = toset(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].zones) == toset(["1", "2", "3"]) && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].sku == "Standard_D4s_v5"
    error_message = "Without failure_domains the pool spreads over the cluster's zones."
  }
  assert {
    condition     = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].source_image_id == "/communityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/images/capi-ubun2-2404/versions/1.34.1"
    error_message = "{semver} becomes the version without its v."
  }
  assert {
    condition     = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].network_interface[0].ip_configuration[0].subnet_id == var.captf_cluster_outputs.worker_subnet_id && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].network_interface[0].network_security_group_id == var.captf_cluster_outputs.worker.network_security_group_id && toset(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].network_interface[0].ip_configuration[0].application_security_group_ids) == toset([var.captf_cluster_outputs.worker.application_security_group_id])
    error_message = "Instances use the worker subnet and security groups."
  }
  assert {
    condition     = toset(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].identity[0].identity_ids) == toset([var.captf_cluster_outputs.worker.identity_id]) && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].termination_notification[0].enabled && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].termination_notification[0].timeout == "PT5M"
    error_message = "Instances run as the worker identity, with termination notifications 5 minutes ahead."
  }
  assert {
    condition     = azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].minimum == 3 && azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].maximum == 3 && azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].default == 3 && length(azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].rule) == 0
    error_message = "Without autoscaling the autoscale setting pins the capacity to replicas, without rules."
  }
  assert {
    condition     = azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].target_resource_id == azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].id
    error_message = "The autoscale setting holds the scale set's capacity."
  }
  assert {
    condition     = startswith(base64decode(nonsensitive(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].custom_data)), "Content-Type: multipart/mixed; boundary=\"captf-boundary-a8a3599f\"\n")
    error_message = "cloud-config custom data is a MIME multipart message."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].custom_data)), "\"userAssignedIdentityID\":\"7a4b9c7d-2e8f-4a3b-9c4d-7e8f9a0b1c2d\"") && strcontains(base64decode(nonsensitive(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].custom_data)), "captf_node_labels=''")
    error_message = "The boothook writes azure.json for the worker identity; without labels the node-labels fragment only clears."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].custom_data)), "Content-Type: text/plain; charset=\"utf-8\"\nMIME-Version: 1.0\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment; filename=\"captf-bootstrap-data\"\n\n${var.bootstrap_data}\n")
    error_message = "The bootstrap data follows unchanged, as a base64 part."
  }
}

run "reapply_is_stable" {
  variables {
    previous_provider_id = run.happy_path.provider_id
    previous_setting_id  = run.happy_path.autoscale_setting_id
  }

  assert {
    condition     = output.provider_id == var.previous_provider_id && output.autoscale_setting_id == var.previous_setting_id
    error_message = "A second identical apply keeps the scale set and its autoscale setting."
  }
}

run "tags_on_taggable_resources" {
  variables {
    additional_tags = { costCenter = "1234" }
  }

  assert {
    condition = alltrue([
      for t in [azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].tags, azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].tags] :
      t["captf.io_cluster"] == "demo" && t["captf.io_kind"] == "TerraformMachinePool" && t["captf.io_name"] == "workers" && t["captf.io_template"] == "" && t["costCenter"] == "1234"
    ])
    error_message = "The scale set and its autoscale setting carry captf_tags as captf.io_<key>, and additional_tags."
  }
  assert {
    condition     = output.scale_set_name == "workers-a8a3599f"
    error_message = "A tag change updates the scale set in place."
  }
}

run "autoscaling_disabled" {
  variables {
    replicas = 5
  }

  assert {
    condition     = azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].minimum == 5 && azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].maximum == 5 && azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].default == 5 && length(azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].rule) == 0
    error_message = "Without autoscaling a replicas change reaches the scale set through the autoscale setting."
  }
  assert {
    condition     = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].instances == 3 && output.replicas == 3 && output.scale_set_name == "workers-a8a3599f"
    error_message = "The scale set ignores capacity changes; replicas reports the capacity as refreshed until Azure Autoscale applies the new one."
  }
}

run "autoscaling_enabled" {
  variables {
    replicas    = 4
    autoscaling = { enabled = true, min = 2, max = 6 }
  }

  assert {
    condition     = azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].minimum == 2 && azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].maximum == 6 && azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].default == 2
    error_message = "With autoscaling the range is min..max and the default is min, never replicas."
  }
  assert {
    condition     = length(azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].rule) == 2 && alltrue([for r in azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].rule : r.metric_trigger[0].metric_name == "Percentage CPU" && r.metric_trigger[0].time_window == "PT10M" && r.metric_trigger[0].metric_resource_id == azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].id && r.scale_action[0].value == 1])
    error_message = "With autoscaling two CPU rules over 10 minutes scale the scale set by one instance."
  }
  assert {
    condition     = sort([for r in azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].rule : "${r.scale_action[0].direction}:${r.metric_trigger[0].operator}:${r.metric_trigger[0].threshold}"]) == tolist(["Decrease:LessThan:25", "Increase:GreaterThan:75"])
    error_message = "Out above 75 % CPU, in below 25 %."
  }
  assert {
    condition     = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].instances == 3 && output.replicas == 3
    error_message = "An apply never resets the capacity Azure Autoscale holds: replicas (4) is ignored."
  }
}

run "autoscaling_custom_thresholds" {
  variables {
    replicas                          = 4
    autoscaling                       = { enabled = true, min = 2, max = 6 }
    autoscaling_scale_out_cpu_percent = 60
    autoscaling_scale_in_cpu_percent  = 20
  }

  assert {
    condition     = sort([for r in azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].rule : tostring(r.metric_trigger[0].threshold)]) == tolist(["20", "60"])
    error_message = "The thresholds come from autoscaling_scale_*_cpu_percent."
  }
}

run "bootstrap_rotation_in_place" {
  variables {
    # "## template: jinja\n#cloud-config\nruncmd: [kubeadm join 2]\n"
    bootstrap_data = "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luIDJdCg=="
  }

  assert {
    condition     = output.scale_set_name == "workers-a8a3599f"
    error_message = "A token rotation keeps the scale set: its model updates in place."
  }
  assert {
    # The boothook's MIME multipart carries the data as base64 in lines of 76 (RFC 2045).
    condition     = strcontains(base64decode(nonsensitive(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].custom_data)), "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luIDJd\nCg==")
    error_message = "The scale set's model carries the rotated data."
  }
}

run "node_labels_rendered" {
  variables {
    node_labels = {
      "team"                           = "payments"
      "node.kubernetes.io/pool"        = "workers"
      "node-role.kubernetes.io/worker" = ""
      "example.k8s.io/tier"            = "gold"
    }
  }

  assert {
    condition     = strcontains(base64decode(nonsensitive(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].custom_data)), "captf_node_labels='node.kubernetes.io/pool=workers,team=payments'")
    error_message = "The boothook registers the labels the kubelet may set, sorted."
  }
  assert {
    condition     = output.dropped_node_labels == tolist(["example.k8s.io/tier", "node-role.kubernetes.io/worker"]) && !strcontains(base64decode(nonsensitive(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].custom_data)), "node-role.kubernetes.io/worker")
    error_message = "Labels the kubelet may not set are dropped and listed."
  }
  assert {
    condition     = output.scale_set_name == "workers-a8a3599f"
    error_message = "A node_labels change updates the model in place."
  }
}

run "bootstrap_ignition" {
  variables {
    bootstrap_format = "ignition"
    # {"ignition":{"version":"3.4.0"}}
    bootstrap_data = "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0="
    node_labels    = { "node-role.kubernetes.io/worker" = "" }
  }

  assert {
    condition     = nonsensitive(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].custom_data) == "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0="
    error_message = "Ignition is custom data unchanged; a label the kubelet may not set leaves nothing to register."
  }
}

run "membership_excludes_terminated" {
  override_data {
    target = data.azurerm_virtual_machine_scale_set.pool_scale_set_status
    values = {
      instances = [
        { computer_name = "workers-a8a3599f000000", instance_id = "0", latest_model_applied = true, name = "workers-a8a3599f_0", power_state = "running", private_ip_address = "10.0.1.4", private_ip_addresses = ["10.0.1.4"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d20", zone = "1" },
        { computer_name = "workers-a8a3599f000001", instance_id = "1", latest_model_applied = true, name = "workers-a8a3599f_1", power_state = "deallocated", private_ip_address = "10.0.1.5", private_ip_addresses = ["10.0.1.5"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d21", zone = "2" },
        { computer_name = "workers-a8a3599f000002", instance_id = "2", latest_model_applied = true, name = "workers-a8a3599f_2", power_state = "stopped", private_ip_address = "10.0.1.6", private_ip_addresses = ["10.0.1.6"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d22", zone = "3" },
      ]
    }
  }

  # Azure has no terminated instance state: stopped and deallocated
  # instances stay members, and a deleted one just leaves the listing.
  assert {
    condition     = length(output.provider_id_list) == 3 && [for i in output.instances : i.state] == ["running", "stopped", "stopped"]
    error_message = "Every listed instance is a member, whatever its power state."
  }
  assert {
    condition     = output.health.state == "stopped" && !output.health.healthy && output.health.reasons == tolist(["PowerState/deallocated:workers-a8a3599f000001", "PowerState/stopped:workers-a8a3599f000002"])
    error_message = "The worst instance state is the pool's, naming each affected instance by hostname."
  }
}

run "health_starting_members" {
  override_data {
    target = data.azurerm_virtual_machine_scale_set.pool_scale_set_status
    values = {
      instances = [
        { computer_name = "workers-a8a3599f000000", instance_id = "0", latest_model_applied = true, name = "workers-a8a3599f_0", power_state = "running", private_ip_address = "10.0.1.4", private_ip_addresses = ["10.0.1.4"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d20", zone = "1" },
        { computer_name = "workers-a8a3599f000001", instance_id = "1", latest_model_applied = true, name = "workers-a8a3599f_1", power_state = "starting", private_ip_address = "10.0.1.5", private_ip_addresses = ["10.0.1.5"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d21", zone = "2" },
        { computer_name = "workers-a8a3599f000002", instance_id = "2", latest_model_applied = true, name = "workers-a8a3599f_2", power_state = "", private_ip_address = "10.0.1.6", private_ip_addresses = ["10.0.1.6"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d22", zone = "3" },
      ]
    }
  }

  assert {
    condition     = output.health.state == "running" && !output.health.healthy && output.health.reasons == tolist(["PowerState/starting:workers-a8a3599f000001", "PowerState/unknown:workers-a8a3599f000002"])
    error_message = "Starting instances leave the pool running, not healthy; pending is only for a pool without members."
  }
}

run "health_unknown_member" {
  override_data {
    target = data.azurerm_virtual_machine_scale_set.pool_scale_set_status
    values = {
      instances = [
        { computer_name = "workers-a8a3599f000000", instance_id = "0", latest_model_applied = true, name = "workers-a8a3599f_0", power_state = "running", private_ip_address = "10.0.1.4", private_ip_addresses = ["10.0.1.4"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d20", zone = "1" },
        { computer_name = "workers-a8a3599f000001", instance_id = "1", latest_model_applied = true, name = "workers-a8a3599f_1", power_state = "hibernated", private_ip_address = "10.0.1.5", private_ip_addresses = ["10.0.1.5"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d21", zone = "2" },
        { computer_name = "workers-a8a3599f000002", instance_id = "2", latest_model_applied = true, name = "workers-a8a3599f_2", power_state = "running", private_ip_address = "10.0.1.6", private_ip_addresses = ["10.0.1.6"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d22", zone = "3" },
      ]
    }
  }

  assert {
    condition     = output.health.state == "unknown" && output.health.reasons == tolist(["UnknownState:workers-a8a3599f000001"]) && [for i in output.instances : i.state] == ["running", "unknown", "running"]
    error_message = "A power state the module does not know makes the instance, and so the pool, unknown."
  }
}

run "health_member_count_mismatch" {
  override_data {
    target = data.azurerm_virtual_machine_scale_set.pool_scale_set_status
    values = {
      instances = [
        { computer_name = "workers-a8a3599f000000", instance_id = "0", latest_model_applied = true, name = "workers-a8a3599f_0", power_state = "running", private_ip_address = "10.0.1.4", private_ip_addresses = ["10.0.1.4"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d20", zone = "1" },
        { computer_name = "workers-a8a3599f000001", instance_id = "1", latest_model_applied = true, name = "workers-a8a3599f_1", power_state = "running", private_ip_address = "10.0.1.5", private_ip_addresses = ["10.0.1.5"], public_ip_address = "", public_ip_addresses = [], virtual_machine_id = "9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d21", zone = "2" },
      ]
    }
  }

  assert {
    condition     = output.health.state == "running" && !output.health.healthy && output.health.reasons == tolist(["ScalingInProgress"])
    error_message = "Running instances short of the capacity are running, not healthy, ScalingInProgress."
  }
}

run "health_not_listed" {
  override_data {
    target = data.azurerm_resources.pool_scale_set_listing
    values = { resources = [] }
  }

  assert {
    condition     = output.health.state == "pending" && output.health.reasons == tolist(["NoMembers"]) && length(output.provider_id_list) == 0
    error_message = "A scale set the listing does not show yet (first apply, new generation) is pending, with no members."
  }
  assert {
    condition     = length(data.azurerm_virtual_machine_scale_set.pool_scale_set_status) == 0
    error_message = "The instance read is skipped while the listing does not show the scale set."
  }
}

run "health_listed_in_another_group" {
  override_data {
    target = data.azurerm_resources.pool_scale_set_listing
    values = {
      resources = [{
        id                  = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/other/providers/Microsoft.Compute/virtualMachineScaleSets/workers-a8a3599f"
        location            = "westeurope"
        name                = "workers-a8a3599f"
        resource_group_name = "other"
        tags                = {}
        type                = "Microsoft.Compute/virtualMachineScaleSets"
      }]
    }
  }

  assert {
    condition     = output.health.state == "pending" && length(data.azurerm_virtual_machine_scale_set.pool_scale_set_status) == 0
    error_message = "Only a scale set in the cluster's resource group counts."
  }
}

run "health_no_instances_yet" {
  override_data {
    target = data.azurerm_virtual_machine_scale_set.pool_scale_set_status
    values = {
      instances = []
    }
  }

  assert {
    condition     = output.health.state == "pending" && output.health.reasons == tolist(["NoMembers"])
    error_message = "A scale set without instances yet is pending, NoMembers."
  }
}

run "cluster_zone_change_keeps_the_scale_set" {
  variables {
    cluster_failure_domains = ["3", "1"]
  }

  assert {
    condition     = toset(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].zones) == toset(["1", "2", "3"]) && output.scale_set_name == "workers-a8a3599f"
    error_message = "A pool without failure_domains keeps the cluster's zones of its first apply, and its scale set."
  }
}

run "kubernetes_version_rolls" {
  variables {
    kubernetes_version = "v1.34.2"
  }

  assert {
    condition     = output.scale_set_name == "workers-c6a3de6a" && output.provider_id == "azure:///subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/captf-demo-rg/providers/Microsoft.Compute/virtualMachineScaleSets/workers-c6a3de6a"
    error_message = "A version change is a new scale set generation, with a new provider_id."
  }
  assert {
    condition     = endswith(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].source_image_id, "/versions/1.34.2") && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].instances == 3
    error_message = "The new generation runs the new version's image, at the capacity of the pool."
  }
}

run "kubernetes_version_suffix_rolls" {
  variables {
    kubernetes_version = "v1.34.2+rke2r1"
  }

  assert {
    condition     = output.scale_set_name == "workers-278bb614"
    error_message = "A suffix-only version change is a new generation too."
  }
  assert {
    condition     = endswith(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].source_image_id, "/versions/1.34.2")
    error_message = "{semver} leaves out the +rke2rN suffix."
  }
}

run "failure_domains_requested" {
  variables {
    kubernetes_version = "v1.34.2+rke2r1"
    failure_domains    = ["2"]
  }

  assert {
    condition     = toset(azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].zones) == toset(["2"]) && output.scale_set_name == "workers-0bebae34"
    error_message = "failure_domains are the zones of a new scale set generation."
  }
}

# Plan-only runs: they leave the state alone.

run "spot_instances" {
  command = plan

  variables {
    kubernetes_version = "v1.34.2+rke2r1"
    failure_domains    = ["2"]
    spot               = true
  }

  assert {
    condition     = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].priority == "Spot" && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].eviction_policy == "Delete" && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].max_bid_price == -1
    error_message = "Spot instances are deleted on eviction and cost at most the on-demand price."
  }
  assert {
    condition     = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].name != "workers-0bebae34"
    error_message = "spot cannot change on a scale set: it is a new generation."
  }
}

run "exports_admin_username_rolls" {
  command = plan

  variables {
    kubernetes_version = "v1.34.2+rke2r1"
    failure_domains    = ["2"]
    captf_cluster_outputs = {
      schema               = "captf.io/azure-cluster/v1"
      subscription_id      = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
      region               = "westeurope"
      resource_group_name  = "Captf-Demo-RG"
      failure_domains      = { "1" = {}, "2" = {}, "3" = {} }
      worker_subnet_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/network/providers/Microsoft.Network/virtualNetworks/hub/subnets/workers"
      admin_username       = "azureuser"
      admin_ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFwmVs7I+fRG7p9REDAqtzqYFaBpxTIY7aDgzqMbcYHf captf@example"
      worker = {
        identity_id                   = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.ManagedIdentity/userAssignedIdentities/captf-demo-worker"
        identity_client_id            = "7a4b9c7d-2e8f-4a3b-9c4d-7e8f9a0b1c2d"
        network_security_group_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/networkSecurityGroups/captf-demo-worker-nsg"
        application_security_group_id = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/applicationSecurityGroups/captf-demo-worker-asg"
      }
      cloud_provider_config = {
        cloud          = "AzurePublicCloud"
        tenantId       = "72f988bf-86f1-41af-91ab-2d7cd011db47"
        subscriptionId = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
        resourceGroup  = "Captf-Demo-RG"
        location       = "westeurope"
        vmType         = "vmss"
      }
    }
  }

  assert {
    condition     = output.scale_set_name == "workers-ce5a0ed8" && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].admin_username == "azureuser"
    error_message = "azurerm replaces a scale set whose admin_username changes: an exports change of it is a new generation."
  }
}

run "exports_region_rolls" {
  command = plan

  variables {
    kubernetes_version = "v1.34.2+rke2r1"
    failure_domains    = ["2"]
    captf_cluster_outputs = {
      schema               = "captf.io/azure-cluster/v1"
      subscription_id      = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
      region               = "northeurope"
      resource_group_name  = "Captf-Demo-RG"
      failure_domains      = { "1" = {}, "2" = {}, "3" = {} }
      worker_subnet_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/network/providers/Microsoft.Network/virtualNetworks/hub/subnets/workers"
      admin_username       = "captf"
      admin_ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFwmVs7I+fRG7p9REDAqtzqYFaBpxTIY7aDgzqMbcYHf captf@example"
      worker = {
        identity_id                   = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.ManagedIdentity/userAssignedIdentities/captf-demo-worker"
        identity_client_id            = "7a4b9c7d-2e8f-4a3b-9c4d-7e8f9a0b1c2d"
        network_security_group_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/networkSecurityGroups/captf-demo-worker-nsg"
        application_security_group_id = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/applicationSecurityGroups/captf-demo-worker-asg"
      }
      cloud_provider_config = {
        cloud          = "AzurePublicCloud"
        tenantId       = "72f988bf-86f1-41af-91ab-2d7cd011db47"
        subscriptionId = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
        resourceGroup  = "Captf-Demo-RG"
        location       = "westeurope"
        vmType         = "vmss"
      }
    }
  }

  assert {
    condition     = output.scale_set_name == "workers-87dff6f7" && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].location == "northeurope"
    error_message = "azurerm replaces a scale set whose location changes: an exports change of region is a new generation."
  }
}

run "exports_resource_group_rolls" {
  command = plan

  variables {
    kubernetes_version = "v1.34.2+rke2r1"
    failure_domains    = ["2"]
    captf_cluster_outputs = {
      schema               = "captf.io/azure-cluster/v1"
      subscription_id      = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
      region               = "westeurope"
      resource_group_name  = "Captf-Workers-RG"
      failure_domains      = { "1" = {}, "2" = {}, "3" = {} }
      worker_subnet_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/network/providers/Microsoft.Network/virtualNetworks/hub/subnets/workers"
      admin_username       = "captf"
      admin_ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFwmVs7I+fRG7p9REDAqtzqYFaBpxTIY7aDgzqMbcYHf captf@example"
      worker = {
        identity_id                   = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.ManagedIdentity/userAssignedIdentities/captf-demo-worker"
        identity_client_id            = "7a4b9c7d-2e8f-4a3b-9c4d-7e8f9a0b1c2d"
        network_security_group_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/networkSecurityGroups/captf-demo-worker-nsg"
        application_security_group_id = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/applicationSecurityGroups/captf-demo-worker-asg"
      }
      cloud_provider_config = {
        cloud          = "AzurePublicCloud"
        tenantId       = "72f988bf-86f1-41af-91ab-2d7cd011db47"
        subscriptionId = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
        resourceGroup  = "Captf-Demo-RG"
        location       = "westeurope"
        vmType         = "vmss"
      }
    }
  }

  assert {
    condition     = output.scale_set_name == "workers-e8d8aba7" && azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].resource_group_name == "Captf-Workers-RG"
    error_message = "azurerm replaces a scale set whose resource group changes: an exports change of it is a new generation."
  }
}

run "externally_managed_with_exports" {
  command = plan

  variables {
    captf_cluster_outputs = {}
    external_cluster_exports = {
      schema               = "captf.io/azure-cluster/v1"
      subscription_id      = "6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11"
      region               = "northeurope"
      resource_group_name  = "Captf-Demo-RG"
      failure_domains      = { "1" = {}, "2" = {}, "3" = {} }
      worker_subnet_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/network/providers/Microsoft.Network/virtualNetworks/hub/subnets/workers"
      admin_username       = "captf"
      admin_ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFwmVs7I+fRG7p9REDAqtzqYFaBpxTIY7aDgzqMbcYHf captf@example"
      worker = {
        identity_id                   = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.ManagedIdentity/userAssignedIdentities/captf-demo-worker"
        identity_client_id            = "7a4b9c7d-2e8f-4a3b-9c4d-7e8f9a0b1c2d"
        network_security_group_id     = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/networkSecurityGroups/captf-demo-worker-nsg"
        application_security_group_id = "/subscriptions/6f1c1e1a-3b7e-4a3c-9a39-5d2f1c0b8e11/resourceGroups/Captf-Demo-RG/providers/Microsoft.Network/applicationSecurityGroups/captf-demo-worker-asg"
      }
    }
  }

  assert {
    condition     = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].location == "northeurope"
    error_message = "external_cluster_exports stands in for the exports of an externally managed cluster."
  }
}

run "rejects_externally_managed_without_exports" {
  command = plan

  variables {
    captf_cluster_outputs = {}
  }

  expect_failures = [data.azurerm_resources.pool_scale_set_listing]
}

run "rejects_failure_domain_outside_the_cluster" {
  command = plan

  variables {
    failure_domains = ["4"]
  }

  expect_failures = [azurerm_linux_virtual_machine_scale_set.pool_scale_set]
}

run "rejects_placeholder_without_version" {
  command = plan

  variables {
    kubernetes_version = null
  }

  expect_failures = [azurerm_linux_virtual_machine_scale_set.pool_scale_set]
}

run "rejects_ignition_with_labels" {
  command = plan

  variables {
    bootstrap_format = "ignition"
    bootstrap_data   = "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0="
    node_labels      = { team = "payments" }
  }

  expect_failures = [azurerm_linux_virtual_machine_scale_set.pool_scale_set]
}

run "rejects_gzipped_ignition" {
  command = plan

  variables {
    bootstrap_format = "ignition"
    # gzip of {"ignition":{"version":"3.4.0"}}
    bootstrap_data = "H4sIAAAAAAAAA6tWykzPyyzJzM9TsqpWKkstKgYzlYz1TPQMlGprAWys13sgAAAA"
  }

  expect_failures = [azurerm_linux_virtual_machine_scale_set.pool_scale_set]
}

run "rejects_oversized_custom_data" {
  command = plan

  variables {
    bootstrap_data = base64encode(format("%070000d", 0))
  }

  expect_failures = [azurerm_linux_virtual_machine_scale_set.pool_scale_set]
}

run "rejects_inverted_autoscaling_thresholds" {
  command = plan

  variables {
    autoscaling                       = { enabled = true, min = 2, max = 6 }
    autoscaling_scale_out_cpu_percent = 30
    autoscaling_scale_in_cpu_percent  = 40
  }

  expect_failures = [azurerm_monitor_autoscale_setting.pool_autoscale_setting]
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
    captf_cluster_outputs = { schema = "captf.io/gcp-cluster/v1" }
  }
  expect_failures = [data.azurerm_resources.pool_scale_set_listing]
}

run "invalid_replicas" {
  command = plan
  variables {
    replicas = 1001
  }
  expect_failures = [data.azurerm_resources.pool_scale_set_listing]
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
    node_labels = { "bad key!" = "x" }
  }
  expect_failures = [var.node_labels]
}

run "invalid_autoscaling" {
  command = plan
  variables {
    autoscaling = { enabled = true, min = 5, max = 2 }
  }
  expect_failures = [var.autoscaling]
}

run "invalid_additional_tags_reserved_key" {
  command = plan
  variables {
    additional_tags = { "CAPTF.IO_name" = "x" }
  }
  expect_failures = [var.additional_tags]
}

run "invalid_additional_tags_characters" {
  command = plan
  variables {
    additional_tags = { "a%b" = "c" }
  }
  expect_failures = [var.additional_tags]
}

run "invalid_additional_tags_count" {
  command = plan
  variables {
    additional_tags = { for i in range(45) : "tag${i}" => "v" }
  }
  expect_failures = [var.additional_tags]
}

run "invalid_autoscaling_scale_in_cpu_percent" {
  command = plan
  variables {
    autoscaling_scale_in_cpu_percent = 0
  }
  expect_failures = [var.autoscaling_scale_in_cpu_percent]
}

run "invalid_autoscaling_scale_out_cpu_percent" {
  command = plan
  variables {
    autoscaling_scale_out_cpu_percent = 101
  }
  expect_failures = [var.autoscaling_scale_out_cpu_percent]
}

run "invalid_external_cluster_exports" {
  command = plan
  variables {
    external_cluster_exports = { schema = "captf.io/azure-cluster/v2" }
  }
  expect_failures = [var.external_cluster_exports]
}

run "invalid_image_id_missing" {
  command = plan
  variables {
    image_id = null
  }
  expect_failures = [var.image_id]
}

run "invalid_image_id_form" {
  command = plan
  variables {
    image_id = "capi-ubuntu-2404"
  }
  expect_failures = [var.image_id]
}

run "invalid_os_disk_size_gib" {
  command = plan
  variables {
    os_disk_size_gib = 4096
  }
  expect_failures = [var.os_disk_size_gib]
}

run "invalid_os_disk_storage_account_type" {
  command = plan
  variables {
    os_disk_storage_account_type = "Premium_v2_LRS"
  }
  expect_failures = [var.os_disk_storage_account_type]
}

run "invalid_vm_size" {
  command = plan
  variables {
    vm_size = "Standard D4s v5"
  }
  expect_failures = [var.vm_size]
}
