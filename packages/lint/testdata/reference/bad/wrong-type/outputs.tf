output "control_plane_endpoint" {
  value = var.control_plane_endpoint != null ? var.control_plane_endpoint : { host = "lb-${var.captf_object.name}.invalid", port = 6443 }
}

output "failure_domains" {
  value = [{ name = "fd1", control_plane = true }]
}

output "exports" {
  value = { backend_id = terraform_data.load_balancer.id }
}

output "health" {
  value = { state = "running", healthy = true }
}
