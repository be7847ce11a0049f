# The bootstrap data as custom data (modules/bootstrap: every format, the
# boothook with azure.json and node labels, the refusals and the size).
module "bootstrap" {
  source = "./modules/bootstrap"

  bootstrap_data        = var.bootstrap_data
  bootstrap_format      = var.bootstrap_format
  node_labels           = var.node_labels
  cloud_provider_config = local.cloud_provider_config
  boundary              = local.mime_boundary
}
