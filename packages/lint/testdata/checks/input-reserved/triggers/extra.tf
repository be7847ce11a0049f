variable "captf_extra" {
  type    = string
  default = ""
}
