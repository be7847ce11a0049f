terraform {
  required_version = ">= 1.5.0"
}

resource "terraform_data" "instance" {
  input = {
    name      = "fixed"
    user_data = var.bootstrap_data
    tags      = var.captf_tags
  }
}
