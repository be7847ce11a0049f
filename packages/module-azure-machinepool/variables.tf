# User variables, set with spec.variables (or spec.variablesFrom) on the
# TerraformMachinePool. Alphabetical. Every one has a default; image_id's is
# null only so that a missing image fails with the message below.

variable "accelerated_networking" {
  description = "Accelerated networking on the instances' NICs. The default size supports it; turn it off for one that does not."
  type        = bool
  default     = true
  nullable    = false
}

variable "additional_tags" {
  description = "Extra Azure tags on the scale set and autoscale setting. Keys starting with captf.io_ or captf.io/ (any case) are rejected; at most 44."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition     = alltrue([for k in keys(var.additional_tags) : !can(regex("(?i)^captf\\.io[_/]", k))])
    error_message = "additional_tags keys must not start with captf.io_ or captf.io/ (in any case): those carry captf_tags."
  }
  validation {
    condition     = length(var.additional_tags) <= 44
    error_message = "additional_tags holds at most 44 tags: a resource takes 50 and captf_tags uses 6."
  }
  validation {
    condition     = alltrue([for k, v in var.additional_tags : length(k) >= 1 && length(k) <= 512 && length(v) <= 256 && !can(regex("[<>%&\\\\?/]", k))])
    error_message = "additional_tags keys must be 1 to 512 characters without < > % & \\ ? or /, and values at most 256 characters."
  }
}

variable "autoscaling_scale_in_cpu_percent" {
  description = "With autoscaling, scale in by one instance below this average CPU over 10 minutes; must be below the scale-out threshold."
  type        = number
  default     = 25
  nullable    = false

  validation {
    condition     = var.autoscaling_scale_in_cpu_percent >= 1 && var.autoscaling_scale_in_cpu_percent <= 100 && floor(var.autoscaling_scale_in_cpu_percent) == var.autoscaling_scale_in_cpu_percent
    error_message = "autoscaling_scale_in_cpu_percent must be a whole number from 1 to 100."
  }
}

variable "autoscaling_scale_out_cpu_percent" {
  description = "With autoscaling, scale out by one instance above this average CPU over 10 minutes."
  type        = number
  default     = 75
  nullable    = false

  validation {
    condition     = var.autoscaling_scale_out_cpu_percent >= 1 && var.autoscaling_scale_out_cpu_percent <= 100 && floor(var.autoscaling_scale_out_cpu_percent) == var.autoscaling_scale_out_cpu_percent
    error_message = "autoscaling_scale_out_cpu_percent must be a whole number from 1 to 100."
  }
}

variable "boot_diagnostics" {
  description = "Keep the serial console logs in Azure-managed storage, to debug a node that never joins."
  type        = bool
  default     = true
  nullable    = false
}

variable "encryption_at_host" {
  description = "Encrypt temporary disks and caches on the host too; needs the EncryptionAtHost feature on the subscription."
  type        = bool
  default     = false
  nullable    = false
}

variable "external_cluster_exports" {
  description = "Exports (schema captf.io/azure-cluster/v1) to use when the TerraformCluster is externally managed and captf_cluster_outputs is {}. Ignored otherwise."
  type        = any
  default     = null

  validation {
    condition     = var.external_cluster_exports == null || try(var.external_cluster_exports.schema == "captf.io/azure-cluster/v1", false)
    error_message = "external_cluster_exports must be null or an object with schema = \"captf.io/azure-cluster/v1\" and the keys the azure-cluster module exports."
  }
}

variable "image_id" {
  description = "Required. A managed image, Compute Gallery image (version), or community or shared gallery image (version) ID. {version} and {semver} become the pool's version, v1.31.4 and 1.31.4, without any +suffix."
  type        = string
  default     = null

  validation {
    condition = var.image_id != null && (
      can(regex("(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\\.Compute/(images/[^/]+|galleries/[^/]+/images/[^/]+(/versions/[^/]+)?)$", var.image_id)) ||
      can(regex("^/(communityGalleries|sharedGalleries)/[^/]+/images/[^/]+(/versions/[^/]+)?$", var.image_id))
    )
    error_message = "image_id is required (spec.variables.image_id): a managed image, gallery image or gallery image version ID, such as /communityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/images/capi-ubun2-2404/versions/{semver}."
  }
}

variable "ip_forwarding" {
  description = "IP forwarding on the NICs, for CNIs that route pod addresses natively."
  type        = bool
  default     = false
  nullable    = false
}

variable "os_disk_size_gib" {
  description = "OS disk size per instance, 30 to 4095 GiB."
  type        = number
  default     = 128
  nullable    = false

  validation {
    condition     = var.os_disk_size_gib >= 30 && var.os_disk_size_gib <= 4095 && floor(var.os_disk_size_gib) == var.os_disk_size_gib
    error_message = "os_disk_size_gib must be a whole number from 30 to 4095."
  }
}

variable "os_disk_storage_account_type" {
  description = "Storage type of the OS disks: Standard_LRS, StandardSSD_LRS, StandardSSD_ZRS, Premium_LRS or Premium_ZRS. A change creates a new scale set."
  type        = string
  default     = "Premium_LRS"
  nullable    = false

  validation {
    condition     = contains(["Standard_LRS", "StandardSSD_LRS", "StandardSSD_ZRS", "Premium_LRS", "Premium_ZRS"], var.os_disk_storage_account_type)
    error_message = "os_disk_storage_account_type must be Standard_LRS, StandardSSD_LRS, StandardSSD_ZRS, Premium_LRS or Premium_ZRS."
  }
}

variable "spot" {
  description = "Spot instances, deleted on eviction, at most the on-demand price. A change creates a new scale set."
  type        = bool
  default     = false
  nullable    = false
}

variable "trusted_launch" {
  description = "Secure boot and vTPM; needs a generation 2 image built for trusted launch. A change creates a new scale set."
  type        = bool
  default     = false
  nullable    = false
}

variable "vm_size" {
  description = "Azure VM size of the instances."
  type        = string
  default     = "Standard_D4s_v5"
  nullable    = false

  validation {
    condition     = can(regex("^(Standard|Basic)_[A-Za-z0-9_-]+$", var.vm_size))
    error_message = "vm_size must be an Azure VM size such as Standard_D4s_v5."
  }
}
