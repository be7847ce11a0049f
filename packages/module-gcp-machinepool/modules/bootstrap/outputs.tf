output "metadata" {
  description = "The all-instances metadata entries that carry the bootstrap data: user-data, and user-data-encoding for cloud-config."
  value       = local.metadata
  sensitive   = true
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
  description = "Ignition data with labels to register, which the pool refuses: Ignition runs no boothook."
  value       = !local.cloud_config && local.has_labels
}

output "gzipped_ignition" {
  description = "Gzipped Ignition data, which the pool refuses: Ignition reads GCE user-data uncompressed."
  value       = !local.cloud_config && local.gzipped
}

output "user_data_bytes" {
  description = "Size in bytes of the user-data metadata value."
  value       = local.user_data_bytes
}

output "user_data_limit_bytes" {
  description = "The most a Compute Engine metadata value may hold: 256 KB."
  value       = 262144
}
