variable "group_name" {
  description = "The managed instance group's name, for messages."
  type        = string
}

variable "group_found" {
  description = "Whether the group still exists: false once a refresh no longer finds it."
  type        = bool
}

variable "target_size" {
  description = "The group's target size as observed: the autoscaler's while it scales; 0 once the group is gone."
  type        = number
}

variable "awaiting_minimum" {
  description = "An autoscaler with a minimum above 0 runs: an empty group is still growing, not scaled to zero."
  type        = bool
}

variable "members" {
  description = "The group's members in every state: the instance URL and its status."
  type = list(object({
    instance = string
    status   = optional(string)
  }))
}
