output "provider_id" {
  value = "noop-group:///${var.captf_object.namespace}/${var.machinepool_name}"
}

output "provider_id_list" {
  value = distinct([for i in terraform_data.group.output.members : i.id if i.state == "RUNNING"])
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
