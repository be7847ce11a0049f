# The pool: one uniform Linux scale set of workers with manual upgrades. A
# token rotation, a new image or size and the like update its model in
# place, for new instances only (providers.tf); a change azurerm cannot make
# in place, or a Kubernetes version change, is a new scale set (names.tf).
resource "azurerm_linux_virtual_machine_scale_set" "pool_scale_set" {
  count = local.pool_plannable ? 1 : 0

  admin_username                  = local.admin_username
  computer_name_prefix            = local.scale_set_name
  custom_data                     = module.bootstrap.user_data
  disable_password_authentication = true
  encryption_at_host_enabled      = var.encryption_at_host
  # An evicted Spot instance is deleted, so it leaves the membership, and
  # Azure Autoscale brings the capacity back when it can.
  eviction_policy = var.spot ? "Delete" : null
  # No VM extensions: nothing here needs one.
  extension_operations_enabled = false
  # The starting capacity only; Azure Autoscale holds it afterwards.
  instances = local.desired_capacity
  location  = local.location
  # -1: pay up to the on-demand price, so eviction is for capacity only.
  max_bid_price = var.spot ? -1 : null
  name          = local.scale_set_name
  # Extra instances would run the bootstrap data and join as Nodes.
  overprovision          = false
  priority               = var.spot ? "Spot" : "Regular"
  provision_vm_agent     = true
  resource_group_name    = local.resource_group_name
  secure_boot_enabled    = var.trusted_launch
  single_placement_group = false
  sku                    = var.vm_size
  source_image_id        = module.image.image_id
  tags                   = local.tags
  # Azure never upgrades instances by itself.
  upgrade_mode = "Manual"
  vtpm_enabled = var.trusted_launch
  # Strict balancing would block a scale-out while one zone lacks capacity.
  zone_balance = false
  zones        = length(local.zones) > 0 ? local.zones : null

  admin_ssh_key {
    public_key = local.admin_ssh_public_key
    username   = local.admin_username
  }

  # Azure-managed storage: no storage account to bring.
  dynamic "boot_diagnostics" {
    for_each = var.boot_diagnostics ? [true] : []

    content {}
  }

  identity {
    identity_ids = [local.identity_id]
    type         = "UserAssigned"
  }

  network_interface {
    accelerated_networking_enabled = var.accelerated_networking
    ip_forwarding_enabled          = var.ip_forwarding
    name                           = local.nic_name
    network_security_group_id      = local.network_security_group_id
    primary                        = true

    ip_configuration {
      application_security_group_ids = [local.application_security_group_id]
      name                           = local.nic_name
      primary                        = true
      subnet_id                      = local.subnet_id
      version                        = "IPv4"
    }
  }

  os_disk {
    caching              = "ReadWrite"
    disk_size_gb         = var.os_disk_size_gib
    storage_account_type = var.os_disk_storage_account_type
  }

  # Scheduled Events announce every deletion 5 minutes ahead, for a
  # termination handler that drains the Node: pools get no drain otherwise.
  termination_notification {
    enabled = true
    timeout = "PT5M"
  }

  lifecycle {
    # A new generation comes up before the old one is deleted: the pool
    # briefly needs twice its quota.
    create_before_destroy = true
    # instances is the scale set's desired count. Azure Autoscale holds it
    # in both modes (autoscale_setting.tf), so an apply never resets it.
    ignore_changes = [instances]

    precondition {
      condition     = length(local.foreign_zones) == 0
      error_message = "failure_domains must be availability zones of the cluster (${length(local.cluster_zones) > 0 ? join(", ", local.cluster_zones) : "none: the cluster's region has no zones"}); these are not: ${join(", ", local.foreign_zones)}."
    }
    precondition {
      condition     = !module.image.version_missing
      error_message = "image_id holds {version} or {semver}, but the MachinePool has no spec.template.spec.version to fill it: set the version, or name a fixed image."
    }
    precondition {
      condition     = !module.bootstrap.ignition_with_labels
      error_message = "Ignition bootstrap data cannot register node_labels: Ignition runs no boothook. Remove the MachinePool template's labels (${join(", ", sort(keys(module.bootstrap.registered_node_labels)))}) or use cloud-config."
    }
    precondition {
      condition     = !module.bootstrap.gzipped_ignition
      error_message = "Gzipped Ignition bootstrap data is not supported. Turn off gzip of the bootstrap data."
    }
    precondition {
      condition     = module.bootstrap.user_data_bytes <= local.custom_data_limit
      error_message = "The custom data is ${module.bootstrap.user_data_bytes} base64 characters, over Azure's ${local.custom_data_limit} (65,535 bytes): gzip the bootstrap data or make it smaller."
    }
  }
}
