# The scale set's name, from its generation (modules/generation): a change
# of anything azurerm can change only by replacing the scale set, the
# cluster exports admin_username, region and resource_group_name included,
# is a new scale set under a new name.
module "generation" {
  source = "./modules/generation"

  machinepool_name             = var.machinepool_name
  failure_domains              = var.failure_domains
  kubernetes_version           = var.kubernetes_version
  os_disk_storage_account_type = var.os_disk_storage_account_type
  spot                         = var.spot
  trusted_launch               = var.trusted_launch
  admin_username               = local.admin_username
  location                     = local.location
  resource_group_name          = local.resource_group_name
}

locals {
  generation_hash = module.generation.hash
  scale_set_name  = module.generation.scale_set_name

  autoscale_setting_name = "${local.scale_set_name}-autoscale"
  nic_name               = "primary"

  # The MIME boundary of the custom data: "-" never occurs in base64.
  mime_boundary = "captf-boundary-${local.generation_hash}"
}
