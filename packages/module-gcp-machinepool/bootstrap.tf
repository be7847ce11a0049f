# The bootstrap data as instance metadata (modules/bootstrap: every format,
# the node-labels boothook, the refusals and the size).
module "bootstrap" {
  source = "./modules/bootstrap"

  bootstrap_data   = var.bootstrap_data
  bootstrap_format = var.bootstrap_format
  node_labels      = var.node_labels
  boundary         = local.mime_boundary
}
