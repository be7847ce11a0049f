output "user_data" {
  description = "What the instances boot with: base64 (user_data_base64), or decoded Ignition."
  value       = local.user_data
  sensitive   = true
}

output "user_data_base64" {
  description = "Whether user_data is base64: always for cloud-config, and for Ignition unless decode_ignition."
  value       = !local.decoded
}

output "user_data_bytes" {
  description = "Size of user_data in bytes."
  value       = local.user_data_bytes
}

output "registered_node_labels" {
  description = "The node labels the boothook registers: those the kubelet may set on itself."
  value       = local.registered_labels
}

output "dropped_node_labels" {
  description = "Keys of node_labels left out because the kubelet may not set them on itself, sorted."
  value       = local.dropped_labels
}

output "gzipped" {
  description = "Whether the bootstrap data is gzipped."
  value       = local.gzipped
}

output "ignition_with_labels" {
  description = "Ignition data with labels left to register, which the pool refuses: Ignition runs no boothook."
  value       = !local.cloud_config && local.has_labels
}

output "gzipped_ignition" {
  description = "Gzipped Ignition data, which the pool refuses: Ignition reads user data uncompressed."
  value       = !local.cloud_config && local.gzipped
}
