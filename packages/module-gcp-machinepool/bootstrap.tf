# The bootstrap data as instance metadata. modules/bootstrap is the pool
# bootstrap module the Azure module includes too (packages/module-pool-bootstrap):
# every format, the node-labels boothook, the refusals and the size.
module "bootstrap" {
  source = "./modules/bootstrap"

  bootstrap_data   = var.bootstrap_data
  bootstrap_format = var.bootstrap_format
  node_labels      = var.node_labels
  boundary         = local.mime_boundary
  module_name      = "gcp-machinepool"
  # Ignition reads GCE user-data as it is.
  decode_ignition = true
}

locals {
  # cloud-config goes with user-data-encoding=base64, which cloud-init's GCE
  # datasource decodes; Ignition reads user-data as it is.
  bootstrap_metadata = module.bootstrap.user_data_base64 ? tomap({
    "user-data"          = module.bootstrap.user_data
    "user-data-encoding" = "base64"
    }) : tomap({
    "user-data" = module.bootstrap.user_data
  })
  # The most a Compute Engine metadata value may hold: 256 KB.
  user_data_limit_bytes = 262144
}
