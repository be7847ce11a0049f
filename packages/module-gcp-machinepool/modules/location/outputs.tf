output "first_project" {
  description = "The project of the pool's first apply."
  value       = local.first.project
}

output "first_region" {
  description = "The region of the pool's first apply."
  value       = local.first.region
}

output "moved" {
  description = "Whether the exports name another project or region than the first apply's."
  value       = local.moved
}
