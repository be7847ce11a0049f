provider "aws" {
  region     = "eu-west-1"
  access_key = var.access_key
  token      = ""
}

variable "access_key" {
  type    = string
  default = null
}
