variable "project" {
  description = "The cluster exports' project, or null without exports."
  type        = string
}

variable "region" {
  description = "The cluster exports' region, or null without exports."
  type        = string
}
