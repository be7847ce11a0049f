terraform {
  required_version = ">= 1.5.0"
}

resource "terraform_data" "load_balancer" {
  input = {
    name = var.captf_object.name
  }
}
