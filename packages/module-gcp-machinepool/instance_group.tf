# The pool: one regional managed instance group over the pool's zones. It
# holds the bootstrap data in its all-instances config, so a token rotation
# is a metadata refresh that never restarts or replaces an instance, and new
# instances boot with the current data. The checks that span several inputs
# sit here, on the pool's main resource.
resource "google_compute_region_instance_group_manager" "pool_instance_group_manager" {
  # count = 1 rather than a single resource: after the group is deleted out
  # of band a refresh reads an empty list, which health reports as gone.
  count = 1

  base_instance_name               = local.base_instance_name
  description                      = local.description
  distribution_policy_target_shape = "EVEN"
  distribution_policy_zones        = local.zones
  name                             = local.group_name
  project                          = local.project
  region                           = local.region
  wait_for_instances               = false

  # The autoscaler's count is kept without ignore_changes: null while an
  # autoscaler runs, which leaves the observed size alone, else replicas.
  # tfcapi-lint's pool/autoscaling-ignore-changes does not know this
  # pattern; the warning is allowed (README "Exceptions").
  target_size = local.target_size

  all_instances_config {
    labels   = local.labels
    metadata = local.bootstrap_metadata
  }

  # Proactive, refresh at least: a metadata or label change refreshes the
  # instances in place, a new image (a version change) replaces them, one
  # surge instance per zone at a time and none removed first.
  update_policy {
    instance_redistribution_type   = "PROACTIVE"
    max_surge_fixed                = length(local.zones)
    max_unavailable_fixed          = 0
    minimal_action                 = "REFRESH"
    most_disruptive_allowed_action = "REPLACE"
    replacement_method             = "SUBSTITUTE"
    type                           = "PROACTIVE"
  }

  version {
    instance_template = google_compute_region_instance_template.pool_instance_template.self_link
    name              = "primary"
  }

  lifecycle {
    # The provider would replace the group, deleting every instance at once.
    precondition {
      condition     = !module.location.moved
      error_message = "The cluster's exports moved the pool from project ${coalesce(module.location.first_project, "-")}, region ${coalesce(module.location.first_region, "-")} to project ${coalesce(local.project, "-")}, region ${coalesce(local.region, "-")}: a managed instance group cannot move, and replacing it would delete every instance at once. Restore the exports, or delete the MachinePool and create it again."
    }
    precondition {
      condition     = length(local.foreign_zones) == 0
      error_message = "failure_domains must be zones of the cluster (${join(", ", local.cluster_zones)}); these are not: ${join(", ", local.foreign_zones)}."
    }
    precondition {
      condition     = length(local.zones) > 0
      error_message = "The pool has no zones: the MachinePool sets no failure domains and the cluster reported none."
    }
    precondition {
      condition     = local.size_ceiling <= local.max_members
      error_message = "A pool holds at most ${local.max_members} instances, the one page the member listing returns, and this one may reach ${local.size_ceiling}: lower the MachinePool's replicas or its cluster-api-autoscaler-node-group-max-size annotation, or split the pool."
    }
    precondition {
      condition     = !module.bootstrap.ignition_with_labels
      error_message = "Ignition bootstrap data cannot register node_labels: Ignition runs no boothook. Remove the MachinePool template's labels (${join(", ", sort(keys(module.bootstrap.registered_node_labels)))}) or use cloud-config."
    }
    precondition {
      condition     = !module.bootstrap.gzipped_ignition
      error_message = "Gzipped Ignition bootstrap data is not supported: Ignition reads GCE user-data uncompressed. Turn off gzip of the bootstrap data."
    }
    precondition {
      condition     = module.bootstrap.user_data_bytes <= local.user_data_limit_bytes
      error_message = "The pool's user-data is ${module.bootstrap.user_data_bytes} bytes, over the ${local.user_data_limit_bytes}-byte (256 KB) limit of an instance metadata value: gzip the bootstrap data or make it smaller."
    }
  }
}

# The group's members in every state, read on each refresh. None once the
# group is gone, so a refresh does not fail on it.
data "google_compute_region_instance_group" "pool_members" {
  count = length(google_compute_region_instance_group_manager.pool_instance_group_manager)

  self_link = google_compute_region_instance_group_manager.pool_instance_group_manager[count.index].instance_group
}
