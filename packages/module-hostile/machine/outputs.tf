# The machine role's contract outputs (v1alpha1), as the no-op machine's, and the attempts.

output "provider_id" {
  description = "hostile:///<namespace>/<machine_name>: stable for the Machine's life."
  value       = terraform_data.instance.id != "" ? "hostile:///${var.captf_object.namespace}/${var.machine_name}" : null
}

output "addresses" {
  description = "A single InternalIP, 10.0.0.2."
  value = [
    { type = "InternalIP", address = "10.0.0.2" },
  ]
}

output "failure_domain" {
  description = "The requested failure domain (null when none was asked for)."
  value       = var.failure_domain
}

output "interruptible" {
  description = "Always false."
  value       = false
}

output "health" {
  description = "Always running and healthy: the attacks never make the machine fail."
  value = {
    state   = "running"
    healthy = true
    message = null
    reasons = []
  }
}

# Not a contract output (the contract allows extra ones and ignores them).
output "attempts" {
  description = "The apply's attempts as attack.cjs reported them: [{phase, attempt, via, target, outcome, detail}]; [] in runs without the provisioner."
  value       = jsondecode(data.terraform_remote_state.report.outputs.attempts_json)
}
