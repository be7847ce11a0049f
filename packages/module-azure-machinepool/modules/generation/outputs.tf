output "hash" {
  description = "8 hex characters of the generation's hash."
  value       = local.hash
}

output "scale_set_name" {
  description = "<machinepool_name made valid, at most 41 characters>-<hash>."
  value       = "${local.name_stem}-${local.hash}"
}

output "placement_moved" {
  description = "Whether admin_username, location or resource_group_name differ from the pool's first apply, and so count."
  value       = local.placement_moved
}
