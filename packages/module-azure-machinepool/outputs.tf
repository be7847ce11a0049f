# The machinepool role's contract outputs (v1alpha1), in contract order.

output "provider_id" {
  description = "azure:///subscriptions/<subscription>/resourceGroups/<group, lowercase>/providers/Microsoft.Compute/virtualMachineScaleSets/<scale set>; changes when a new generation replaces the scale set, null once it is gone."
  value       = local.provider_id
}

output "provider_id_list" {
  description = "<provider_id>/virtualMachines/<instance ID> of every instance the scale set lists, whatever its power state, sorted; [] until the listing shows a new scale set."
  value       = sort(module.membership.provider_id_list)
}

output "replicas" {
  description = "The scale set's capacity as last refreshed, which Azure Autoscale sets; null once the scale set is gone."
  value       = local.observed_capacity
}

output "instances" {
  description = "Per instance: provider_id, instance_id, addresses (InternalIP, Hostname), failure_domain (its zone) and state."
  value       = module.membership.instances
}

output "health" {
  description = "The pool's health from its instances' power states and its capacity (README \"Health\")."
  value       = module.membership.health
}

# Extra outputs, alphabetical. The controller never reads them.

output "autoscale_setting_id" {
  description = "The autoscale setting's ARM ID."
  value       = one(azurerm_monitor_autoscale_setting.pool_autoscale_setting[*].id)
}

output "dropped_node_labels" {
  description = "Keys of node_labels left out because the kubelet may not set them on itself."
  value       = module.bootstrap.dropped_node_labels
}

output "scale_set_id" {
  description = "The current scale set's ARM ID."
  value       = local.scale_set_id
}

output "scale_set_name" {
  description = "The current scale set's name; a new generation has a new one."
  value       = one(azurerm_linux_virtual_machine_scale_set.pool_scale_set[*].name)
}
