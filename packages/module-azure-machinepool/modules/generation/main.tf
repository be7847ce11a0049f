# The scale set's generation and name. No cloud provider (terraform_data is
# built in), so tests/ runs anywhere with `tofu test`.
#
# The name is also its instances' hostname prefix, and cloud-provider-azure
# finds an instance by its hostname. It carries 8 hex characters of a hash
# over every input azurerm can change on a scale set only by replacing it:
# a change of any of them is a new generation with a new name, which
# create_before_destroy brings up before the old one goes, so the two never
# share a name. The Kubernetes version counts verbatim (a +rke2rN bump
# included). Zones the pool took from the cluster are pinned at its first
# apply (placement.tf) and do not count. Every other argument of the scale
# set either updates in place or is a constant.

terraform {
  required_version = ">= 1.5.0"
}

# The cluster exports the scale set cannot change in place, as of the pool's
# first apply: they count only once they differ, so a pool created before
# they counted keeps its name.
resource "terraform_data" "first_placement" {
  input = local.placement

  lifecycle {
    ignore_changes = [input]
  }
}

locals {
  # azurerm compares locations normalised ("West Europe" is westeurope).
  placement = {
    admin_username      = var.admin_username
    location            = var.location == null ? null : lower(replace(var.location, " ", ""))
    resource_group_name = var.resource_group_name
  }
  # .input, not .output: known at the first plan, the first apply's afterwards.
  placement_moved = local.placement != terraform_data.first_placement.input

  generation = jsonencode(merge({
    pool                         = var.machinepool_name
    failure_domains              = sort(distinct(var.failure_domains))
    kubernetes_version           = var.kubernetes_version
    os_disk_storage_account_type = var.os_disk_storage_account_type
    spot                         = var.spot
    trusted_launch               = var.trusted_launch
  }, local.placement_moved ? { placement = local.placement } : {}))
  hash = substr(sha256(local.generation), 0, 8)

  # Lowercase letters, digits and -, at most 41 characters, then - and the
  # hash: 50 at most, a valid DNS label, room for the 6 characters Azure
  # appends to each hostname.
  name_stem = trimsuffix(substr(replace(lower(var.machinepool_name), "/[^a-z0-9-]/", "-"), 0, 41), "-")
}
