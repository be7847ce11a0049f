# The machine role's contract inputs (v1alpha1), each with the contract's
# type. Nullable inputs default to null; the others have no default.

variable "captf_contract" {
  description = "The module contract version the controller rendered for."
  type        = string

  validation {
    condition     = var.captf_contract == "v1alpha1"
    error_message = "This module implements contract v1alpha1 only."
  }
}

variable "captf_cluster" {
  description = "The owning Cluster API Cluster."
  type = object({
    name      = string
    namespace = string
  })
}

variable "captf_object" {
  description = "The TerraformMachine this module runs for."
  type = object({
    kind      = string
    name      = string
    namespace = string
  })
}

variable "captf_cluster_outputs" {
  description = "The cluster module's exports, verbatim ({} for an externally managed cluster)."
  type        = any
  # The controller always sets it; the default only spares hand-written roots.
  default = null
}

variable "captf_tags" {
  description = "Tags for every taggable resource (six captf.io/ keys)."
  type        = map(string)
}

variable "machine_name" {
  description = "The owning Machine's name."
  type        = string
}

variable "bootstrap_data" {
  description = "The bootstrap Secret's value, as standard padded base64."
  type        = string
  sensitive   = true

  validation {
    condition     = can(base64decode(var.bootstrap_data))
    error_message = "bootstrap_data must be base64 of UTF-8 text."
  }
}

variable "bootstrap_format" {
  description = "cloud-config or ignition."
  type        = string

  validation {
    condition     = contains(["cloud-config", "ignition"], var.bootstrap_format)
    error_message = "bootstrap_format must be cloud-config or ignition."
  }
}

variable "failure_domain" {
  description = "The failure domain the Machine asks for, or null."
  type        = string
  default     = null
}

variable "kubernetes_version" {
  description = "The Machine's Kubernetes version, verbatim, or null."
  type        = string
  default     = null
}

variable "control_plane" {
  description = "Whether the Machine is a control-plane machine."
  type        = bool
}
