output "provider_id" {
  value = "noop-group:///${var.captf_object.namespace}/${var.machinepool_name}"
}

output "provider_id_list" {
  value = sort(local.ids)
}

output "replicas" {
  value = var.replicas
}

output "instances" {
  value = [for id in local.ids : { provider_id = id, state = "running" }]
}

output "health" {
  value = { state = "running", healthy = true }
}
