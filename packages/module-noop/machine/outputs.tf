# The machine role's contract outputs (v1alpha1).

output "provider_id" {
  description = "noop:///<namespace>/<machine_name>: stable for the Machine's life."
  # Known only once the stand-in instance exists, like a real instance id.
  value = terraform_data.instance.id != "" ? "noop:///${var.captf_object.namespace}/${var.machine_name}" : null
}

output "addresses" {
  description = "A single InternalIP, 10.0.0.1."
  value = [
    { type = "InternalIP", address = "10.0.0.1" },
  ]
}

output "failure_domain" {
  description = "The requested failure domain (null when none was asked for)."
  value       = var.failure_domain
}

output "interruptible" {
  description = "Always false: nothing here is a spot instance."
  value       = false
}

output "health" {
  description = "Running and healthy, unless var.health_state_url answers an observed state that says otherwise."
  value = local.observed_health != null ? local.observed_health : {
    state   = "running"
    healthy = true
    message = null
    reasons = []
  }
}
