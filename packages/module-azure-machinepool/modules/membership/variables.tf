variable "scale_set_name" {
  description = "The current scale set's name, for messages."
  type        = string
}

variable "scale_set_exists" {
  description = "Whether the scale set is still in the state: false once a refresh dropped it."
  type        = bool
}

variable "scale_set_listed" {
  description = "Whether Azure's resource listing shows the scale set; its instances are read only then."
  type        = bool
}

variable "capacity" {
  description = "The scale set's capacity as last refreshed (Azure Autoscale sets it); null once it is gone."
  type        = number
  default     = null
}

variable "provider_id" {
  description = "The scale set's provider ID, azure:///subscriptions/.../virtualMachineScaleSets/<name>."
  type        = string
  default     = null
}

variable "instances" {
  description = "The scale set's instances as Azure lists them."
  type = list(object({
    instance_id        = string
    computer_name      = optional(string)
    power_state        = optional(string)
    private_ip_address = optional(string)
    zone               = optional(string)
  }))
}
