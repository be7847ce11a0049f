# The machinepool role's contract outputs (v1alpha1).

output "provider_id" {
  description = "noop-group:///<namespace>/<object name>: the stand-in group's id."
  value       = terraform_data.group.id != "" ? "noop-group:///${var.captf_object.namespace}/${var.captf_object.name}" : null
}

output "provider_id_list" {
  description = "Every member, noop:///<namespace>/<object name>/<i>, sorted and de-duplicated."
  value       = sort(distinct(local.member_ids))
}

output "replicas" {
  description = "The group's desired count."
  value       = local.desired_capacity
}

output "instances" {
  description = "One running entry per member, each in one of the pool's zones when it has any."
  value = [
    for i, id in local.member_ids : {
      provider_id    = id
      instance_id    = "${var.captf_object.name}-${i}"
      addresses      = []
      failure_domain = length(local.zones) > 0 ? local.zones[i % length(local.zones)] : null
      state          = "running"
    }
  ]
}

output "health" {
  description = "Running; healthy once every member the desired count asks for exists (always, here)."
  value = {
    state   = "running"
    healthy = length(local.member_ids) == local.desired_capacity
    message = null
    reasons = []
  }
}
