# Where the pool runs and how big it may get.

# The cluster's zones as of the pool's first apply, for a pool without its
# own failure domains. A group's zones cannot change without replacing it,
# every instance at once, so a later change of the cluster's zones must not
# reach it: the input is read once and then ignored.
resource "terraform_data" "pool_default_zones" {
  input = sort(length(var.cluster_failure_domains) > 0 ? var.cluster_failure_domains : local.export_zones)

  lifecycle {
    ignore_changes = [input]
  }
}

# The project and region of the pool's first apply (modules/location): the
# group refuses exports that move it (instance_group.tf).
module "location" {
  source = "./modules/location"

  project = local.project
  region  = local.region
}

locals {
  # Zones the pool may name: the cluster's.
  cluster_zones  = sort(distinct(concat(var.cluster_failure_domains, local.export_zones)))
  explicit_zones = length(var.failure_domains) > 0
  zones          = local.explicit_zones ? sort(distinct(var.failure_domains)) : terraform_data.pool_default_zones.output
  foreign_zones  = local.explicit_zones ? sort(setsubtract(var.failure_domains, local.cluster_zones)) : []

  # An autoscaler runs only with a maximum above 0: min = max = 0 is an
  # empty group, which a target size of 0 says without one.
  autoscaler_enabled = var.autoscaling.enabled && var.autoscaling.max > 0
  # Null while an autoscaler runs: the target size is optional and
  # computed, so null leaves the autoscaler's value alone and no apply
  # resets it. Otherwise replicas (0 when autoscaling allows no instance).
  target_size = local.autoscaler_enabled ? null : (var.autoscaling.enabled ? 0 : var.replicas)

  # The member listing is one request and Compute Engine answers with at
  # most 500 instances; the provider asks for no second page.
  max_members  = 500
  size_ceiling = local.autoscaler_enabled ? var.autoscaling.max : var.replicas
}
