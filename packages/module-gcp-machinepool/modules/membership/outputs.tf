output "provider_id_list" {
  description = "gce://<project>/<zone>/<instance> of every member except those being deleted, sorted and without duplicates."
  value       = sort(local.live_ids)
}

output "instances" {
  description = "Per member, in provider ID order: provider_id, instance_id (the instance name), addresses, failure_domain (its zone) and state."
  value = [
    for m in local.live : {
      provider_id    = m.provider_id
      instance_id    = m.name
      addresses      = []
      failure_domain = m.zone
      state          = m.state
    }
  ]
}

output "health" {
  description = "The pool's health, by the rows above."
  value       = local.health
}
