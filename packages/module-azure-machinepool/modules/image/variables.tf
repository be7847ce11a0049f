variable "image_id" {
  description = "The image ID as the user wrote it, placeholders included; null when unset."
  type        = string
  default     = null
}

variable "kubernetes_version" {
  description = "The contract's kubernetes_version, verbatim (v1.31.4, v1.31.4+rke2r1), or null."
  type        = string
  default     = null
}
