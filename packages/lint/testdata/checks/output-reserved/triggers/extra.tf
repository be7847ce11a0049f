output "captf_debug" {
  value = var.machine_name
}
