# The cluster role's contract outputs (v1alpha1).

output "control_plane_endpoint" {
  description = "The user's endpoint when one was given, else noop-<object name>.invalid:6443."
  value       = var.control_plane_endpoint != null ? var.control_plane_endpoint : local.generated_endpoint
}

output "failure_domains" {
  description = "One failure domain, fd1, eligible for control-plane machines."
  value = [
    { name = "fd1", control_plane = true, attributes = {} },
  ]
}

output "exports" {
  description = "What machines and pools receive as captf_cluster_outputs: the stand-in load balancer's id."
  value = {
    backend_id = "noop-backend-${terraform_data.load_balancer.id}"
  }
}

output "health" {
  description = "Always running and healthy: there is nothing to observe."
  value = {
    state   = "running"
    healthy = true
    message = null
    reasons = []
  }
}
