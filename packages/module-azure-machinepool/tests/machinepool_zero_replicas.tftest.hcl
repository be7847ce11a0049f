# A pool created at capacity 0, in a file of its own so that it has its own
# state: the scale set's capacity is set only when it is created (the
# scale set ignores later changes), so it must start at 0. Needs the
# hashicorp/azurerm 5.7.0 provider for its schema: `tofu init && tofu test`.

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
  replicas = 0
}

run "zero_replicas_healthy" {
  override_data {
    target = data.azurerm_virtual_machine_scale_set.pool_scale_set_status
    values = {
      instances = []
    }
  }

  assert {
    condition     = output.replicas == 0 && length(output.provider_id_list) == 0 && length(output.instances) == 0
    error_message = "A pool at capacity 0 has no members."
  }
  assert {
    condition     = output.health.state == "running" && output.health.healthy
    error_message = "A pool at capacity 0 is running and healthy."
  }
  assert {
    condition     = azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].maximum == 0 && azurerm_monitor_autoscale_setting.pool_autoscale_setting[0].profile[0].capacity[0].default == 0
    error_message = "Azure Autoscale holds the capacity at 0."
  }
}
