variable "machinepool_name" {
  description = "The owning MachinePool's name."
  type        = string
}

variable "failure_domains" {
  description = "The MachinePool's own failure domains, [] when it names none."
  type        = list(string)
}

variable "kubernetes_version" {
  description = "The pool's Kubernetes version, verbatim, or null."
  type        = string
  default     = null
}

variable "os_disk_storage_account_type" {
  description = "The OS disks' storage type."
  type        = string
}

variable "spot" {
  description = "Spot instances (priority and eviction policy)."
  type        = bool
}

variable "trusted_launch" {
  description = "Secure boot and vTPM."
  type        = bool
}

variable "admin_username" {
  description = "The cluster exports' admin_username, or null without exports."
  type        = string
}

variable "location" {
  description = "The cluster exports' region, or null without exports."
  type        = string
}

variable "resource_group_name" {
  description = "The cluster exports' resource_group_name, or null without exports."
  type        = string
}
