# The cluster role's contract inputs (v1alpha1), each with the contract's
# type. Inputs the controller may render as null default to null; the others
# have no default, so a root that forgets one fails at validate.
#
# captf_cluster_outputs is deliberately absent: the cluster role never
# receives it (its generated root declares no such variable).

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
  description = "The TerraformCluster this module runs for."
  type = object({
    kind      = string
    name      = string
    namespace = string
  })
}

variable "captf_tags" {
  description = "Tags for every taggable resource (six captf.io/ keys)."
  type        = map(string)
}

variable "control_plane_endpoint" {
  description = "The endpoint the user set, or null when the module must provide one."
  type = object({
    host = string
    port = number
  })
  default = null

  validation {
    condition = var.control_plane_endpoint == null || try(
      length(var.control_plane_endpoint.host) > 0 &&
      var.control_plane_endpoint.port >= 1 &&
      var.control_plane_endpoint.port <= 65535 &&
      floor(var.control_plane_endpoint.port) == var.control_plane_endpoint.port,
      false
    )
    error_message = "control_plane_endpoint needs a non-empty host and a whole port between 1 and 65535."
  }
}

variable "kubernetes_version" {
  description = "The ClusterClass topology version, or null."
  type        = string
  default     = null
}

variable "control_plane_initialized" {
  description = "Whether the control plane has been initialized (latched once true)."
  type        = bool
}

variable "cluster_network" {
  description = "Cluster.spec.clusterNetwork, or null when none is set. Unset lists are [], unset scalars null."
  type = object({
    pods            = list(string)
    services        = list(string)
    service_domain  = string
    api_server_port = number
  })
  default = null
}

variable "api_token" {
  description = "Stands in for a credential a real module takes as a variable (from a labelled Secret): sensitive, and only its presence is recorded."
  type        = string
  default     = null
  sensitive   = true
}

variable "notes" {
  description = "A free-form note recorded on the stand-in load balancer: a user input whose change plans an in-place update (the demo's approval example)."
  type        = string
  default     = null
}
