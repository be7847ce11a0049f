output "provider_id_list" {
  description = "<provider_id>/virtualMachines/<instance ID> of every listed instance, whatever its power state, sorted and without duplicates."
  value       = sort(local.ids)
}

output "instances" {
  description = "Per instance, in provider ID order: provider_id, instance_id, addresses (InternalIP, Hostname), failure_domain (its zone) and state."
  value = [
    for m in local.live : {
      provider_id    = m.provider_id
      instance_id    = m.instance_id
      addresses      = m.addresses
      failure_domain = m.zone
      state          = m.health.state
    }
  ]
}

output "health" {
  description = "The pool's health, by the rows above."
  value       = local.health
}
