# The machinepool role's contract outputs (v1alpha1), in contract order.

output "provider_id" {
  description = "The group's ID, projects/<project>/regions/<region>/instanceGroupManagers/<name>; null once the group is gone."
  value       = one(google_compute_region_instance_group_manager.pool_instance_group_manager[*].id)
}

output "provider_id_list" {
  description = "gce://<project>/<zone>/<instance> of every member in any state except those being deleted (DEPROVISIONING), sorted."
  value       = sort(module.membership.provider_id_list)
}

output "replicas" {
  description = "The group's target size as observed: the autoscaler's while it scales; 0 once the group is gone."
  value       = local.observed_target_size
}

output "instances" {
  description = "Per member: provider_id, instance_id (the instance name), addresses (none: the listing carries none), failure_domain (its zone) and state."
  value       = module.membership.instances
}

output "health" {
  description = "The pool's health from its members and target size (README \"Health\")."
  value       = module.membership.health
}

# Extra outputs, alphabetical. The controller never reads them.

output "autoscaler_id" {
  description = "The autoscaler's ID; null while no autoscaler runs."
  value       = one(google_compute_region_autoscaler.pool_autoscaler[*].id)
}

output "dropped_node_labels" {
  description = "Keys of node_labels the kubelet may not set on itself (kubernetes.io and k8s.io namespaces), which the pool does not register."
  value       = module.bootstrap.dropped_node_labels
}

output "instance_group_manager_id" {
  description = "The group's numeric ID; changes only when the group is replaced."
  value       = one(google_compute_region_instance_group_manager.pool_instance_group_manager[*].instance_group_manager_id)
}

output "instance_template_id" {
  description = "The current instance template's ID; a new one means the pool rolls."
  value       = google_compute_region_instance_template.pool_instance_template.id
}
