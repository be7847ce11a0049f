# The bootstrap data as custom data. modules/bootstrap is the pool bootstrap
# module the GCP module includes too (packages/module-pool-bootstrap): every
# format, the boothook with azure.json and node labels, the refusals and the size.
# Custom data, not user data: Azure serves user data to every process on the
# node through the instance metadata service. It is base64 either way.
module "bootstrap" {
  source = "./modules/bootstrap"

  bootstrap_data   = var.bootstrap_data
  bootstrap_format = var.bootstrap_format
  node_labels      = var.node_labels
  boundary         = local.mime_boundary
  module_name      = "azure-machinepool"
  # cloud-provider-azure and the Azure Disk CSI driver read azure.json: it
  # names the worker identity and holds no secret. cloud-config always gets
  # the boothook, so it is written, and an earlier boot's labels cleared.
  boothook_files  = { "/etc/kubernetes/azure.json" = local.cloud_provider_config }
  always_boothook = true
}

locals {
  # The most custom data Azure takes: 65,535 bytes, which is 87,380 base64 characters.
  custom_data_limit = 87380
}
