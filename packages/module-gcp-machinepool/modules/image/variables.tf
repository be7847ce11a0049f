variable "image" {
  description = "The image as the user wrote it, placeholders included; null when unset."
  type        = string
  default     = null
}

variable "kubernetes_version" {
  description = "The contract's kubernetes_version, verbatim (v1.33.4, v1.31.4+rke2r2), or null."
  type        = string
  default     = null
}
