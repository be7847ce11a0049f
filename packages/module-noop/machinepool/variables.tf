# The machinepool role's contract inputs (v1alpha1), each with the
# contract's type. Only kubernetes_version is nullable (default null);
# lists and maps arrive as [] or {} when empty, so they have no default.

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
  description = "The TerraformMachinePool this module runs for."
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

variable "machinepool_name" {
  description = "The owning MachinePool's name."
  type        = string
}

variable "replicas" {
  description = "The desired member count; with autoscaling on, the observed count clamped into [min, max]."
  type        = number

  validation {
    # range() lists at most 1024 elements, so this module models at most
    # 1024 members.
    condition     = var.replicas >= 0 && var.replicas <= 1024 && floor(var.replicas) == var.replicas
    error_message = "replicas must be a whole number from 0 to 1024 (the no-op pool's limit)."
  }
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

variable "failure_domains" {
  description = "The failure domains the MachinePool asks for; [] lets the module choose."
  type        = list(string)
}

variable "cluster_failure_domains" {
  description = "The failure domain names the cluster module reported."
  type        = list(string)
}

variable "kubernetes_version" {
  description = "The pool's Kubernetes version, verbatim, or null."
  type        = string
  default     = null
}

variable "node_labels" {
  description = "Labels every member's Node should register with."
  type        = map(string)
}

variable "autoscaling" {
  description = "Native autoscaling: {enabled=false, min=0, max=0} when off."
  type = object({
    enabled = bool
    min     = number
    max     = number
  })

  validation {
    condition = !var.autoscaling.enabled || (
      var.autoscaling.min >= 0 &&
      var.autoscaling.min <= var.autoscaling.max &&
      var.autoscaling.min <= 1024 &&
      floor(var.autoscaling.min) == var.autoscaling.min &&
      floor(var.autoscaling.max) == var.autoscaling.max
    )
    error_message = "With autoscaling enabled, min and max must be whole numbers with 0 <= min <= max, and min at most 1024 (the no-op pool's limit)."
  }
}
