# The Compute Engine autoscaler, while the MachinePool's autoscaler
# annotations enable autoscaling with a maximum above 0. It owns the group's
# target size between min and max, on CPU; replicas is then ignored.
# tfcapi-lint:ignore pool/autoscaling-ignore-changes the group keeps the autoscaler's count without ignore_changes: its target_size is null while an autoscaler runs (instance_group.tf), an exception the README allows
resource "google_compute_region_autoscaler" "pool_autoscaler" {
  count = local.autoscaler_enabled ? 1 : 0

  description = local.description
  name        = local.group_name
  project     = local.project
  region      = local.region
  target      = google_compute_region_instance_group_manager.pool_instance_group_manager[0].id

  autoscaling_policy {
    # The initialization period: a booting instance's CPU is not counted.
    cooldown_period = var.autoscaling_initialization_seconds
    max_replicas    = var.autoscaling.max
    min_replicas    = var.autoscaling.min
    mode            = "ON"

    cpu_utilization {
      target = var.autoscaling_target_cpu_percent / 100
    }
  }
}
