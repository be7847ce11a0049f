output "control_plane_endpoint" {
  value = null
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
