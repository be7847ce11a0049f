# The scale set's name is also its instances' hostname prefix, and
# cloud-provider-azure finds an instance by its hostname. It carries 8 hex
# characters of a hash over everything azurerm cannot change on a scale set
# in place, plus the Kubernetes version verbatim (a +rke2rN bump included):
# a change of any of them is a new scale set generation with a new name,
# which create_before_destroy brings up before the old one goes. Zones the
# pool took from the cluster are pinned at its first apply and do not count.
locals {
  generation = jsonencode({
    pool                         = var.machinepool_name
    failure_domains              = sort(distinct(var.failure_domains))
    kubernetes_version           = var.kubernetes_version
    os_disk_storage_account_type = var.os_disk_storage_account_type
    spot                         = var.spot
    trusted_launch               = var.trusted_launch
  })
  generation_hash = substr(sha256(local.generation), 0, 8)

  # Lowercase letters, digits and -, at most 41 characters, then - and the
  # hash: 50 at most, a valid DNS label, room for the 6 characters Azure
  # appends to each hostname.
  name_stem      = trimsuffix(substr(replace(lower(var.machinepool_name), "/[^a-z0-9-]/", "-"), 0, 41), "-")
  scale_set_name = "${local.name_stem}-${local.generation_hash}"

  autoscale_setting_name = "${local.scale_set_name}-autoscale"
  nic_name               = "primary"

  # The MIME boundary of the custom data: "-" never occurs in base64.
  mime_boundary = "captf-boundary-${local.generation_hash}"
}
