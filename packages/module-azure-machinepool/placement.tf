# Where the pool runs and at what capacity.

# The cluster's zones as of the pool's first apply, for a pool without its
# own failure domains: a later change of the cluster's zones must not
# replace the scale set. The input is read once and then ignored.
resource "terraform_data" "pool_default_zones" {
  input = sort(length(var.cluster_failure_domains) > 0 ? var.cluster_failure_domains : local.export_zones)

  lifecycle {
    ignore_changes = [input]
  }
}

locals {
  cluster_zones  = sort(distinct(concat(var.cluster_failure_domains, local.export_zones)))
  explicit_zones = length(var.failure_domains) > 0
  zones          = local.explicit_zones ? sort(distinct(var.failure_domains)) : terraform_data.pool_default_zones.output
  foreign_zones  = local.explicit_zones ? sort(setsubtract(var.failure_domains, local.cluster_zones)) : []

  # The capacity a new scale set starts at, and the one the autoscale
  # setting pins while autoscaling is off. The controller already clamps
  # replicas into [min, max] while autoscaling is on; clamping again keeps a
  # hand-written apply in range.
  desired_capacity = var.autoscaling.enabled ? max(var.autoscaling.min, min(var.autoscaling.max, var.replicas)) : var.replicas
  # A scale set holds at most 1000 instances.
  capacity_within_limit = var.replicas <= 1000 && (!var.autoscaling.enabled || var.autoscaling.max <= 1000)
  # What the scale set and its autoscale setting need before they can be
  # planned; otherwise neither is, and the listing's preconditions say why.
  pool_plannable = local.exports_placeable && local.capacity_within_limit
}
