output "custom_data" {
  description = "The scale set's custom data, base64."
  value       = local.custom_data
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
  description = "Ignition data with labels left to register, which the pool refuses: Ignition runs no boothook."
  value       = !local.cloud_config && local.has_labels
}

output "gzipped_ignition" {
  description = "Gzipped Ignition data, which the pool refuses."
  value       = !local.cloud_config && local.gzipped
}

output "custom_data_length" {
  description = "Length of the custom data in base64 characters."
  value       = nonsensitive(length(local.custom_data))
}

output "custom_data_limit" {
  description = "The most custom data Azure takes: 65,535 bytes, which is 87,380 base64 characters."
  value       = 87380
}
