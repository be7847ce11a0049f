# The machinepool role's contract inputs (v1alpha1), each with the contract's
# type. The controller sets every one; only kubernetes_version may be null.
# captf_cluster and captf_object are declared, as the contract requires, but
# not used: names come from machinepool_name, and captf_tags names the
# objects on every taggable resource.

variable "captf_contract" {
  description = "The contract version the controller rendered the root for."
  type        = string

  validation {
    condition     = var.captf_contract == "v1alpha1"
    error_message = "captf_contract must be \"v1alpha1\": this module implements the v1alpha1 machinepool role only."
  }
}

variable "captf_cluster" {
  description = "The owning Cluster API Cluster (not used)."
  type = object({
    name      = string
    namespace = string
  })
}

variable "captf_object" {
  description = "The TerraformMachinePool (not used)."
  type = object({
    kind      = string
    name      = string
    namespace = string
  })
}

variable "captf_cluster_outputs" {
  description = "The azure-cluster module's exports (schema captf.io/azure-cluster/v1), or {} when the TerraformCluster is externally managed."
  type        = any

  validation {
    condition     = try(length(var.captf_cluster_outputs) == 0, false) || try(var.captf_cluster_outputs.schema == "captf.io/azure-cluster/v1", false)
    error_message = "captf_cluster_outputs must be {} or exports of schema captf.io/azure-cluster/v1: the TerraformCluster runs a module other than azure-cluster."
  }
}

variable "captf_tags" {
  description = "The six captf.io/ tags; applied, as captf.io_<key>, to the scale set and its autoscale setting."
  type        = map(string)
}

variable "machinepool_name" {
  description = "The MachinePool's name; names the scale set and its instances' hostnames."
  type        = string
}

variable "replicas" {
  description = "The pool's capacity while autoscaling is off, held by the autoscale setting; the observed capacity while it is on."
  type        = number

  validation {
    condition     = var.replicas >= 0 && var.replicas <= 1000 && floor(var.replicas) == var.replicas
    error_message = "replicas must be a whole number from 0 to 1000, the most instances a scale set holds."
  }
}

variable "bootstrap_data" {
  description = "Standard padded base64 of the bootstrap data (cloud-config or Ignition, maybe gzipped). It rotates, and is never parsed."
  type        = string
  sensitive   = true

  validation {
    condition     = can(regex("^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$", var.bootstrap_data))
    error_message = "bootstrap_data must be standard padded base64."
  }
}

variable "bootstrap_format" {
  description = "The bootstrap data's format: cloud-config or ignition."
  type        = string

  validation {
    condition     = contains(["cloud-config", "ignition"], var.bootstrap_format)
    error_message = "bootstrap_format must be cloud-config or ignition."
  }
}

variable "failure_domains" {
  description = "MachinePool.spec.failureDomains: the availability zones to spread over, or [] for the cluster's zones of the first apply. A change creates a new scale set."
  type        = list(string)
}

variable "cluster_failure_domains" {
  description = "The cluster's failure domains (availability zones), read at the pool's first apply when failure_domains is []."
  type        = list(string)
}

variable "kubernetes_version" {
  description = "The pool's Kubernetes version, verbatim; a change, a +rke2rN bump included, creates a new scale set. Fills {version} and {semver} in image_id."
  type        = string
  default     = null
}

variable "node_labels" {
  description = "Labels every new instance's kubelet registers (a boothook); those the kubelet may not set on itself are dropped."
  type        = map(string)

  # The labels end up in a shell script, so only label syntax gets through.
  validation {
    condition = alltrue([
      for k, v in var.node_labels :
      can(regex("^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$", k)) &&
      can(regex("^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$", v))
    ])
    error_message = "node_labels must be Kubernetes labels: keys [prefix/]name with a name of at most 63 characters of [A-Za-z0-9-_.], and values likewise or empty."
  }
}

variable "autoscaling" {
  description = "The MachinePool's autoscaler annotations: enabled, Azure Autoscale scales the pool between min and max on CPU."
  type = object({
    enabled = bool
    min     = number
    max     = number
  })

  validation {
    condition = !var.autoscaling.enabled || (
      var.autoscaling.min >= 0 && var.autoscaling.min <= var.autoscaling.max && var.autoscaling.max <= 1000 &&
      floor(var.autoscaling.min) == var.autoscaling.min && floor(var.autoscaling.max) == var.autoscaling.max
    )
    error_message = "With autoscaling enabled, min and max must be whole numbers with 0 <= min <= max <= 1000: a scale set holds at most 1000 instances."
  }
}
