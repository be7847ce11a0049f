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

variable "boundary" {
  description = "The MIME boundary: a string that cannot occur in base64 or in the boothook."
  type        = string
}

variable "module_name" {
  description = "The pool module's name (gcp-machinepool, azure-machinepool), in the boothook's first comment: it changes the user data, so it stays what each module always sent."
  type        = string
}

variable "boothook_files" {
  description = "Files the boothook writes, mode 0644, when they are absent: absolute path to content. They hold no secret: the boothook is in the user data."
  type        = map(string)
  default     = {}
}

variable "always_boothook" {
  description = "Send cloud-config as a multipart message with the boothook even without labels to register (the boothook_files must be written, or an earlier boot's labels cleared)."
  type        = bool
  default     = false
}

variable "decode_ignition" {
  description = "Deliver Ignition data decoded, as the cloud's user data is read as it is (GCE metadata); else it stays base64 (Azure custom data)."
  type        = bool
  default     = false
}
