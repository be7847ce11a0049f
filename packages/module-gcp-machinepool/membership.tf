# Membership and health from what the last refresh read (modules/membership).
locals {
  group_found = length(google_compute_region_instance_group_manager.pool_instance_group_manager) > 0
  # Read through splats, never one() of the whole group: its metadata is
  # sensitive, and the mark would follow every output.
  observed_target_size = coalesce(one(google_compute_region_instance_group_manager.pool_instance_group_manager[*].target_size), 0)
  member_listing = [
    for m in flatten(data.google_compute_region_instance_group.pool_members[*].instances) : {
      instance = m.instance
      status   = m.status
    }
  ]
}

module "membership" {
  source = "./modules/membership"

  group_name       = local.group_name
  group_found      = local.group_found
  target_size      = local.observed_target_size
  awaiting_minimum = local.autoscaler_enabled && var.autoscaling.min > 0
  members          = local.member_listing
}
