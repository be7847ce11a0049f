terraform {
  required_version = ">= 1.5.0"
}

resource "terraform_data" "group" {
  input = {
    name      = var.machinepool_name
    replicas  = var.replicas
    user_data = var.bootstrap_data
    tags      = var.captf_tags
  }
}

locals {
  ids = [for i in range(var.replicas) : "noop:///${var.captf_object.namespace}/${var.machinepool_name}/${i}"]
}
