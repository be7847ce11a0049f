variable "bootstrap_data" {
  description = "The contract's bootstrap_data: standard padded base64 of cloud-config or Ignition, possibly gzipped."
  type        = string
  sensitive   = true
}

variable "bootstrap_format" {
  description = "cloud-config or ignition."
  type        = string

  validation {
    condition     = contains(["cloud-config", "ignition"], var.bootstrap_format)
    error_message = "bootstrap_format must be cloud-config or ignition."
  }
}

variable "node_labels" {
  description = "The labels new instances should register, already checked for Kubernetes label syntax."
  type        = map(string)
}

variable "cloud_provider_config" {
  description = "The JSON the boothook writes to /etc/kubernetes/azure.json when the file is absent."
  type        = string
}

variable "boundary" {
  description = "The MIME boundary: a string that cannot occur in base64 or in the boothook."
  type        = string
}
