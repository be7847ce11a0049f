output "debug_name" {
  value = var.machine_name
}
